"""Element-wise selection: keep x where it exceeds y, otherwise a damped copy of y."""

import torch
import torch.nn as nn

BATCH = 8192
DIM = 2048

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "elementwise"
LEVEL = "1"
OPS = ["torch.where", "torch.gt", "torch.mul"]


class Model(nn.Module):
    def __init__(self, damping: float):
        super().__init__()
        self.damping = damping

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.where(x > y, x, y * self.damping)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [0.25]
