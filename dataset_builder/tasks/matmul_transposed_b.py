"""Matrix product with the second operand transposed, C = A @ B^T (B stored row-major as (N, K))."""

import torch
import torch.nn as nn

M = 2048
K = 4096
N = 8192

SMALL = {"M": 32, "K": 64, "N": 48}
CATEGORY = "matmul"
LEVEL = "1"
OPS = ["torch.matmul", "torch.Tensor.t"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b.t())


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
