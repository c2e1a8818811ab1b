"""ELU activation on a 4-D feature map."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 128
HEIGHT = 64
WIDTH = 64

SMALL = {"BATCH": 2, "CHANNELS": 4, "HEIGHT": 16, "WIDTH": 16}
CATEGORY = "activation"
LEVEL = "1"
OPS = ["torch.nn.functional.elu"]


class Model(nn.Module):
    def __init__(self, alpha: float):
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [1.3]
