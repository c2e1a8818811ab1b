"""2-D max pooling with a 3x3 window, stride 2 and padding 1 (the ResNet stem pooling)."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 64
HEIGHT = 224
WIDTH = 224

SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 20, "WIDTH": 20}
CATEGORY = "pooling"
LEVEL = "1"
OPS = ["torch.nn.MaxPool2d"]


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [3, 2, 1]
