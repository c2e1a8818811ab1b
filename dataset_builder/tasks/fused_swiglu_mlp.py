"""SwiGLU feed-forward block (LLaMA MLP): down(silu(gate(x)) * up(x)), no biases."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 4096
INTERMEDIATE = 11008

SMALL = {"TOKENS": 16, "HIDDEN": 32, "INTERMEDIATE": 64}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.nn.functional.silu", "torch.mul"]


class Model(nn.Module):
    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE]
