"""2-D convolution with a 3x3 kernel, stride 1, padding 1, with bias."""

import torch
import torch.nn as nn

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 128
WIDTH = 128

SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 8, "HEIGHT": 12, "WIDTH": 12}
CATEGORY = "conv"
LEVEL = "1"
OPS = ["torch.nn.Conv2d"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
