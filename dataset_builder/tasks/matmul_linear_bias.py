"""Fully connected layer y = x W^T + b (nn.Linear) at transformer projection sizes."""

import torch
import torch.nn as nn

TOKENS = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096

SMALL = {"TOKENS": 32, "IN_FEATURES": 64, "OUT_FEATURES": 48}
CATEGORY = "matmul"
LEVEL = "1"
OPS = ["torch.nn.Linear"]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
