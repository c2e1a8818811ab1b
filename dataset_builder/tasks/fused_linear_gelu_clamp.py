"""Linear layer, GELU, scaling and clamping to a range: a four-op epilogue chain after a GEMM."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
IN_FEATURES = 2048
OUT_FEATURES = 8192

SMALL = {"BATCH": 32, "IN_FEATURES": 48, "OUT_FEATURES": 64}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.nn.functional.gelu", "torch.mul", "torch.clamp"]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float, low: float, high: float):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        self.low = low
        self.high = high

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.gelu(self.linear(x)) * self.scale
        return torch.clamp(y, min=self.low, max=self.high)


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES) * 2.0]


def get_init_inputs():
    # The range clips the largest activations but leaves most values untouched.
    return [IN_FEATURES, OUT_FEATURES, 2.0, -0.25, 2.5]
