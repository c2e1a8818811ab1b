"""RMS normalization (as in LLaMA): x / sqrt(mean(x^2) + eps) * weight, written out with torch ops."""

import torch
import torch.nn as nn

TOKENS = 16384
HIDDEN = 4096

SMALL = {"TOKENS": 16, "HIDDEN": 256}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.pow", "torch.mean", "torch.rsqrt", "torch.mul"]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(dim=-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.weight


def get_inputs():
    scale = torch.rand(TOKENS, 1) * 4.0 + 0.1
    return [torch.randn(TOKENS, HIDDEN) * scale]


def get_init_inputs():
    return [HIDDEN, 1e-6]
