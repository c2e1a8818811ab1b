"""Matrix-vector product y = A x (a memory-bound GEMV), with x given as a (K, 1) column."""

import torch
import torch.nn as nn

M = 16384
K = 16384

SMALL = {"M": 64, "K": 64}
CATEGORY = "matmul"
LEVEL = "1"
OPS = ["torch.matmul"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, x)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
