"""Depthwise 1-D convolution (one filter per channel, kernel 7, same padding), as in ConvNeXt-style blocks."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 512
LENGTH = 8192

SMALL = {"BATCH": 2, "CHANNELS": 8, "LENGTH": 128}
CATEGORY = "conv"
LEVEL = "1"
OPS = ["torch.nn.Conv1d"]


class Model(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(
            channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=True
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [CHANNELS, 7]
