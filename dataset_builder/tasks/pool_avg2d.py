"""2-D average pooling with a 2x2 window and stride 2."""

import torch
import torch.nn as nn

BATCH = 64
CHANNELS = 128
HEIGHT = 112
WIDTH = 112

SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 16, "WIDTH": 16}
CATEGORY = "pooling"
LEVEL = "1"
OPS = ["torch.nn.AvgPool2d"]


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [2, 2]
