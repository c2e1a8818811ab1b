"""Exact (erf) GELU in half precision, as in a transformer MLP."""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 8192
HIDDEN = 11008

SMALL = {"TOKENS": 16, "HIDDEN": 256}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.gelu"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


def get_inputs():
    return [(torch.randn(TOKENS, HIDDEN) * 2.0).half()]


def get_init_inputs():
    return []
