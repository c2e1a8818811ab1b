"""Hard-swish activation, x * relu6(x + 3) / 6 (MobileNetV3)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 128
CHANNELS = 96
HEIGHT = 56
WIDTH = 56

SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 16, "WIDTH": 16}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.hardswish"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardswish(x)


def get_inputs():
    # Spread over both saturation points (-3 and +3).
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH) * 3.0]


def get_init_inputs():
    return []
