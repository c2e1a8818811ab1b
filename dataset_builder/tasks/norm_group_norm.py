"""Group normalization of a convolutional feature map with learned per-channel affine parameters.

The channel count is GROUPS * CHANNELS_PER_GROUP, so every size constant can change on its own.
"""

import torch
import torch.nn as nn

BATCH = 32
GROUPS = 8
CHANNELS_PER_GROUP = 32
HEIGHT = 64
WIDTH = 64

SMALL = {"BATCH": 2, "GROUPS": 2, "CHANNELS_PER_GROUP": 4, "HEIGHT": 12, "WIDTH": 12}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.nn.GroupNorm"]


class Model(nn.Module):
    def __init__(self, num_groups: int, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups, channels, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.copy_(1.0 + 0.5 * torch.randn(channels))
            self.norm.bias.copy_(0.2 * torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs():
    return [torch.randn(BATCH, GROUPS * CHANNELS_PER_GROUP, HEIGHT, WIDTH) * 3.0 + 1.0]


def get_init_inputs():
    return [GROUPS, GROUPS * CHANNELS_PER_GROUP]
