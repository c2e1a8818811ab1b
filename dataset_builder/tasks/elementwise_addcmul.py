"""Fused multiply-add of three tensors: y = a + value * b * c (torch.addcmul)."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 4096

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "elementwise"
LEVEL = "1"
OPS = ["torch.addcmul"]


class Model(nn.Module):
    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.addcmul(a, b, c, value=self.value)


def get_inputs():
    return [torch.randn(BATCH, DIM), torch.randn(BATCH, DIM), torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [0.75]
