"""Unbiased variance over the last dimension."""

import torch
import torch.nn as nn

BATCH = 16384
DIM = 4096

SMALL = {"BATCH": 32, "DIM": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.var"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.var(x, dim=-1, correction=1)


def get_inputs():
    # Row scales and offsets: variance must be computed around the mean, not assumed to be about 1.
    scale = torch.rand(BATCH, 1) * 3.0 + 0.2
    offset = torch.randn(BATCH, 1) * 5.0
    return [torch.randn(BATCH, DIM) * scale + offset]


def get_init_inputs():
    return []
