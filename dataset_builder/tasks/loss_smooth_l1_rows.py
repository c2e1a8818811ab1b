"""Per-sample smooth-L1 (Huber-style) regression loss, averaged over each row's features."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
FEATURES = 1024

SMALL = {"BATCH": 16, "FEATURES": 128}
CATEGORY = "loss"
LEVEL = "1"
OPS = ["torch.nn.functional.smooth_l1_loss", "torch.mean"]


class Model(nn.Module):
    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        loss = F.smooth_l1_loss(predictions, targets, reduction="none", beta=self.beta)
        return loss.mean(dim=1)


def get_inputs():
    # Errors on both sides of beta, with per-row scales.
    scale = torch.rand(BATCH, 1) * 2.0
    return [torch.randn(BATCH, FEATURES) * scale, torch.randn(BATCH, FEATURES) * 0.5]


def get_init_inputs():
    return [1.0]
