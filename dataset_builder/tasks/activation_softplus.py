"""Softplus activation with a sharpness parameter and the linear regime above a threshold."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 4096

SMALL = {"BATCH": 16, "DIM": 256}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.softplus"]


class Model(nn.Module):
    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


def get_inputs():
    # Wide enough that some values take the linear branch (beta * x > threshold).
    return [torch.randn(BATCH, DIM) * 6.0]


def get_init_inputs():
    return [2.0, 10.0]
