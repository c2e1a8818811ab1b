"""Reverse (suffix) cumulative sum along the last dimension, as used for returns-to-go."""

import torch
import torch.nn as nn

BATCH = 2048
LENGTH = 16384

SMALL = {"BATCH": 16, "LENGTH": 256}
CATEGORY = "scan"
LEVEL = "1"
OPS = ["torch.flip", "torch.cumsum"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flip(torch.cumsum(torch.flip(x, dims=[-1]), dim=-1), dims=[-1])


def get_inputs():
    return [torch.randn(BATCH, LENGTH)]


def get_init_inputs():
    return []
