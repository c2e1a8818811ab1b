"""Cumulative product of per-step growth factors along a sequence (e.g. discount or decay products)."""

import torch
import torch.nn as nn

BATCH = 4096
LENGTH = 4096

SMALL = {"BATCH": 16, "LENGTH": 128}
CATEGORY = "scan"
LEVEL = "1"
OPS = ["torch.cumprod"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, factors: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(factors, dim=1)


def get_inputs():
    # Factors close to 1 so the products neither overflow nor vanish over the sequence.
    return [1.0 + 0.05 * torch.randn(BATCH, LENGTH)]


def get_init_inputs():
    return []
