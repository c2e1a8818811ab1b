"""Group normalization of a convolutional feature map with learned per-channel affine parameters."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 256
HEIGHT = 64
WIDTH = 64

SMALL = {"BATCH": 2, "CHANNELS": 8, "HEIGHT": 12, "WIDTH": 12}
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
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 3.0 + 1.0]


def get_init_inputs():
    return [4, CHANNELS]
