"""Convolution, group normalization and SiLU: the ResNet block of diffusion U-Nets.

The output channel count is GROUPS * CHANNELS_PER_GROUP, so every size constant can change on its own.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 16
IN_CHANNELS = 128
GROUPS = 32
CHANNELS_PER_GROUP = 4
HEIGHT = 64
WIDTH = 64

SMALL = {"BATCH": 2, "IN_CHANNELS": 4, "GROUPS": 2, "CHANNELS_PER_GROUP": 4, "HEIGHT": 10, "WIDTH": 10}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Conv2d", "torch.nn.GroupNorm", "torch.nn.functional.silu"]


class Model(nn.Module):
    def __init__(self, in_channels: int, num_groups: int, channels_per_group: int):
        super().__init__()
        out_channels = num_groups * channels_per_group
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        self.norm = nn.GroupNorm(num_groups, out_channels)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.3 * torch.randn(out_channels))
            self.norm.bias.copy_(0.2 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.norm(self.conv(x)))


def get_inputs():
    return [torch.randn(BATCH, IN_CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [IN_CHANNELS, GROUPS, CHANNELS_PER_GROUP]
