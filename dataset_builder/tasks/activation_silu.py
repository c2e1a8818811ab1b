"""SiLU (swish) activation, x * sigmoid(x), on a large activation map."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 4096

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.silu"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(x)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
