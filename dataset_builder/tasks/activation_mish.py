"""Mish activation, x * tanh(softplus(x))."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 4096
DIM = 8192

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.mish"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.mish(x)


def get_inputs():
    return [torch.randn(BATCH, DIM) * 2.0]


def get_init_inputs():
    return []
