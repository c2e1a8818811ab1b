"""3x3 convolution, 2x2 max pooling, scaling, then tanh."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
IN_CHANNELS = 32
OUT_CHANNELS = 64
HEIGHT = 128
WIDTH = 128

SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 8, "HEIGHT": 16, "WIDTH": 16}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Conv2d", "torch.nn.functional.max_pool2d", "torch.mul", "torch.tanh"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, scale: float):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(self.conv(x), kernel_size=2, stride=2)
        return torch.tanh(y * self.scale)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS, 0.8]
