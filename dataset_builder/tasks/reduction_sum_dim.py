"""Sum over the last dimension of a 3-D tensor (keeps the reduced dimension)."""

import torch
import torch.nn as nn

BATCH = 64
ROWS = 512
DIM = 4096

SMALL = {"BATCH": 2, "ROWS": 16, "DIM": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.sum"]


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim, keepdim=True)


def get_inputs():
    return [torch.randn(BATCH, ROWS, DIM)]


def get_init_inputs():
    return [-1]
