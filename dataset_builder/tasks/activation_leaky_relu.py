"""Leaky ReLU with a fairly large negative slope."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16384
DIM = 4096

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.leaky_relu"]


class Model(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [0.2]
