"""Triplet margin loss per triplet (anchor, positive, negative) with Euclidean distances, no reduction."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32768
DIM = 512

SMALL = {"BATCH": 32, "DIM": 64}
CATEGORY = "loss"
LEVEL = "1"
OPS = ["torch.nn.functional.triplet_margin_loss"]


class Model(nn.Module):
    def __init__(self, margin: float):
        super().__init__()
        self.margin = margin

    def forward(self, anchor: torch.Tensor, positive: torch.Tensor, negative: torch.Tensor) -> torch.Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=2.0, reduction="none")


def get_inputs():
    anchor = torch.randn(BATCH, DIM)
    positive = anchor + 0.5 * torch.randn(BATCH, DIM)
    negative = anchor + torch.rand(BATCH, 1) * torch.randn(BATCH, DIM)
    return [anchor, positive, negative]


def get_init_inputs():
    return [2.0]
