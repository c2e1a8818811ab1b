"""Batch normalization in inference mode: normalize with stored running statistics, then scale and shift.

The statistics are applied with ``training=False`` explicitly, so the result does not depend on the module's
train/eval flag and the running buffers are never updated.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
CHANNELS = 256
HEIGHT = 56
WIDTH = 56

SMALL = {"BATCH": 2, "CHANNELS": 8, "HEIGHT": 12, "WIDTH": 12}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.nn.functional.batch_norm"]


class Model(nn.Module):
    def __init__(self, channels: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(1.0 + 0.3 * torch.randn(channels))
        self.bias = nn.Parameter(0.2 * torch.randn(channels))
        # Running statistics as a trained network would hold them (not the 0 / 1 defaults).
        self.register_buffer("running_mean", 0.5 * torch.randn(channels))
        self.register_buffer("running_var", 0.5 + torch.rand(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias, training=False, eps=self.eps
        )


def get_inputs():
    return [torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH)]


def get_init_inputs():
    return [CHANNELS, 1e-5]
