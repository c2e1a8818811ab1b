"""Convolution, batch normalization with running statistics (inference form), then ReLU: a ResNet unit."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
IN_CHANNELS = 64
OUT_CHANNELS = 128
HEIGHT = 56
WIDTH = 56

SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "OUT_CHANNELS": 8, "HEIGHT": 10, "WIDTH": 10}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Conv2d", "torch.nn.functional.batch_norm", "torch.relu"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.weight = nn.Parameter(1.0 + 0.3 * torch.randn(out_channels))
        self.bias = nn.Parameter(0.2 * torch.randn(out_channels))
        self.register_buffer("running_mean", 0.3 * torch.randn(out_channels))
        self.register_buffer("running_var", 0.5 + torch.rand(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = F.batch_norm(y, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=1e-5)
        return torch.relu(y)


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, OUT_CHANNELS]
