"""Euclidean (L2) norm of every row."""

import torch
import torch.nn as nn

BATCH = 32768
DIM = 2048

SMALL = {"BATCH": 32, "DIM": 128}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.linalg.vector_norm"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, ord=2, dim=-1)


def get_inputs():
    scale = torch.rand(BATCH, 1) * 2.0 + 0.1
    return [torch.randn(BATCH, DIM) * scale]


def get_init_inputs():
    return []
