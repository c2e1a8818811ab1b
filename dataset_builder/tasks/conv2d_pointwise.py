"""Pointwise (1x1) 2-D convolution mixing channels, without bias."""

import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 256
OUT_CHANNELS = 512
HEIGHT = 56
WIDTH = 56

SMALL = {"BATCH": 2, "IN_CHANNELS": 16, "OUT_CHANNELS": 24, "HEIGHT": 8, "WIDTH": 8}
CATEGORY = "conv"
LEVEL = "1"
OPS = ["torch.nn.Conv2d"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
