"""Numerically stable log-sum-exp over the last dimension."""

import torch
import torch.nn as nn

BATCH = 8192
DIM = 8192

SMALL = {"BATCH": 32, "DIM": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.logsumexp"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.logsumexp(x, dim=-1)


def get_inputs():
    # Large-magnitude rows with different scales: a naive exp would overflow, and rows differ clearly.
    scale = torch.rand(BATCH, 1) * 20.0 + 1.0
    return [torch.randn(BATCH, DIM) * scale]


def get_init_inputs():
    return []
