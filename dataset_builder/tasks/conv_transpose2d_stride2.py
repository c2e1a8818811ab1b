"""Transposed 2-D convolution that doubles the spatial size (kernel 4, stride 2, padding 1), as in decoders."""

import torch
import torch.nn as nn

BATCH = 16
IN_CHANNELS = 128
OUT_CHANNELS = 64
HEIGHT = 64
WIDTH = 64

SMALL = {"BATCH": 1, "IN_CHANNELS": 8, "OUT_CHANNELS": 4, "HEIGHT": 8, "WIDTH": 8}
CATEGORY = "conv"
LEVEL = "1"
OPS = ["torch.nn.ConvTranspose2d"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size=4, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deconv(x)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
