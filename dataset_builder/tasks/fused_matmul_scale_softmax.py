"""Scores from a matrix product, scaled and normalized with softmax over the last dimension."""

import torch
import torch.nn as nn

M = 4096
K = 256
N = 4096

SMALL = {"M": 32, "K": 32, "N": 64}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.matmul", "torch.mul", "torch.softmax"]


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.matmul(a, b) * self.scale, dim=-1)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return [0.125]
