"""Global average pooling to one value per channel (adaptive average pooling to 1x1), then flatten."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 256
CHANNELS = 2048
HEIGHT = 14
WIDTH = 14

SMALL = {"BATCH": 4, "CHANNELS": 16, "HEIGHT": 8, "WIDTH": 8}
CATEGORY = "pooling"
LEVEL = "1"
OPS = ["torch.nn.functional.adaptive_avg_pool2d", "torch.flatten"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)


def get_inputs():
    # Post-ReLU-like activations with a per-channel level, so channel means differ clearly.
    level = torch.rand(BATCH, CHANNELS, 1, 1) * 2.0
    return [torch.relu(torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) + level)]


def get_init_inputs():
    return []
