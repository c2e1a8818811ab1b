"""Square single-precision matrix multiplication, C = A @ B."""

import torch
import torch.nn as nn

N = 4096

SMALL = {"N": 64}
CATEGORY = "matmul"
LEVEL = "1"
OPS = ["torch.matmul"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
