"""Instance normalization (per sample and channel, over the spatial dimensions), no affine parameters."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 128
HEIGHT = 128
WIDTH = 128

SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 16, "WIDTH": 16}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.nn.functional.instance_norm"]


class Model(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.instance_norm(x, eps=self.eps)


def get_inputs():
    scale = torch.rand(BATCH, CHANNELS, 1, 1) * 3.0 + 0.5
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * scale + 2.0]


def get_init_inputs():
    return [1e-5]
