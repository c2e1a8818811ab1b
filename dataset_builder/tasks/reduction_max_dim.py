"""Maximum values over the last dimension (the values of torch.max, not the indices)."""

import torch
import torch.nn as nn

BATCH = 16384
DIM = 4096

SMALL = {"BATCH": 32, "DIM": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.max"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=-1).values


def get_inputs():
    scale = torch.rand(BATCH, 1) * 4.0 + 0.5
    return [torch.randn(BATCH, DIM) * scale]


def get_init_inputs():
    return []
