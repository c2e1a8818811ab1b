"""Residual add followed by layer normalization (the post-norm transformer sub-layer output)."""

import torch
import torch.nn as nn

BATCH = 16
SEQ = 2048
HIDDEN = 2048

SMALL = {"BATCH": 2, "SEQ": 16, "HIDDEN": 128}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.add", "torch.nn.LayerNorm"]


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(hidden))
            self.norm.bias.copy_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.norm(x + residual)


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN), torch.randn(BATCH, SEQ, HIDDEN) * 2.0]


def get_init_inputs():
    return [HIDDEN]
