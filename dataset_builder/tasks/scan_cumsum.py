"""Inclusive prefix sum (cumulative sum) along the last dimension."""

import torch
import torch.nn as nn

BATCH = 2048
LENGTH = 16384

SMALL = {"BATCH": 16, "LENGTH": 256}
CATEGORY = "scan"
LEVEL = "1"
OPS = ["torch.cumsum"]


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(BATCH, LENGTH)]


def get_init_inputs():
    return [1]
