"""Linear layer followed by ReLU: the classic GEMM + activation fusion."""

import torch
import torch.nn as nn

BATCH = 4096
IN_FEATURES = 4096
OUT_FEATURES = 4096

SMALL = {"BATCH": 32, "IN_FEATURES": 64, "OUT_FEATURES": 64}
CATEGORY = "fused"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.relu"]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
