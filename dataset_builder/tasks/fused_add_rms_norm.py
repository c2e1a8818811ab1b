"""Residual add then RMS normalization; returns both the normalized output and the updated residual."""

import torch
import torch.nn as nn

TOKENS = 16384
HIDDEN = 4096

SMALL = {"TOKENS": 16, "HIDDEN": 128}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.add", "torch.pow", "torch.mean", "torch.rsqrt", "torch.mul"]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor):
        hidden = x + residual
        normed = hidden * torch.rsqrt(hidden.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return normed, hidden


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN), torch.randn(TOKENS, HIDDEN) * 3.0]


def get_init_inputs():
    return [HIDDEN, 1e-6]
