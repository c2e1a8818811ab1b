"""Per-sample mean squared error between predictions and targets (mean over features, one loss per row)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 1024

SMALL = {"BATCH": 16, "FEATURES": 128}
CATEGORY = "loss"
LEVEL = "1"
OPS = ["torch.nn.functional.mse_loss", "torch.mean"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(predictions, targets, reduction="none").mean(dim=1)


def get_inputs():
    # Per-row scales so the loss varies strongly from row to row.
    scale = torch.rand(BATCH, 1) * 3.0
    return [torch.randn(BATCH, FEATURES) * scale, torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return []
