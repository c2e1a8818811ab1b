"""Half-precision broadcast bias add followed by ReLU over a (tokens, hidden) activation."""

import torch
import torch.nn as nn

TOKENS = 16384
HIDDEN = 4096

SMALL = {"TOKENS": 16, "HIDDEN": 256}
CATEGORY = "elementwise"
LEVEL = "1"
OPS = ["torch.add", "torch.relu"]


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden).half())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.bias)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN).half()]


def get_init_inputs():
    return [HIDDEN]
