"""Tanh-approximated GELU followed by a constant scale: y = gelu(x) * scale."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
DIM = 8192

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "elementwise"
LEVEL = "1"
OPS = ["torch.nn.functional.gelu", "torch.mul"]


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh") * self.scale


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [1.702]
