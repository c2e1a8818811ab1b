"""Mean over the middle dimension of a (batch, rows, features) tensor."""

import torch
import torch.nn as nn

BATCH = 128
ROWS = 4096
FEATURES = 256

SMALL = {"BATCH": 2, "ROWS": 64, "FEATURES": 16}
CATEGORY = "reduction"
LEVEL = "1"
OPS = ["torch.mean"]


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mean(x, dim=self.dim)


def get_inputs():
    # A per-(batch, feature) offset keeps the means well away from zero and from each other.
    offset = torch.randn(BATCH, 1, FEATURES)
    return [torch.randn(BATCH, ROWS, FEATURES) + offset]


def get_init_inputs():
    return [1]
