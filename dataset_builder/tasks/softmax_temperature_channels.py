"""Temperature-scaled softmax over the channel dimension (dim 1) of a (batch, channels, length) tensor."""

import torch
import torch.nn as nn

BATCH = 32
CHANNELS = 512
LENGTH = 4096

SMALL = {"BATCH": 2, "CHANNELS": 32, "LENGTH": 32}
CATEGORY = "softmax"
LEVEL = "1"
OPS = ["torch.div", "torch.softmax"]


class Model(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=1)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, LENGTH)]


def get_init_inputs():
    return [0.5]
