"""Running maximum along the last dimension (values of torch.cummax)."""

import torch
import torch.nn as nn

BATCH = 4096
LENGTH = 8192

SMALL = {"BATCH": 16, "LENGTH": 256}
CATEGORY = "scan"
LEVEL = "1"
OPS = ["torch.cummax"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cummax(x, dim=-1).values


def get_inputs():
    # A drifting random walk, so the running maximum keeps changing along the row.
    return [torch.cumsum(torch.randn(BATCH, LENGTH), dim=-1)]


def get_init_inputs():
    return []
