"""Linear projection, scaled, plus the input as a residual: y = (x W^T + b) * scale + x."""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 4096

SMALL = {"TOKENS": 32, "HIDDEN": 64}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.mul", "torch.add"]


class Model(nn.Module):
    def __init__(self, hidden: int, scale: float):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * self.scale + x


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, 0.5]
