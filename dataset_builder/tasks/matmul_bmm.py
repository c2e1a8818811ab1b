"""Batched matrix multiplication, C[b] = A[b] @ B[b]."""

import torch
import torch.nn as nn

BATCH = 128
M = 512
K = 1024
N = 512

SMALL = {"BATCH": 2, "M": 32, "K": 48, "N": 32}
CATEGORY = "matmul"
LEVEL = "1"
OPS = ["torch.bmm"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
