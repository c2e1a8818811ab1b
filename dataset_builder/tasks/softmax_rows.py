"""Row-wise softmax over the last dimension of a wide score matrix."""

import torch
import torch.nn as nn

BATCH = 4096
DIM = 8192

SMALL = {"BATCH": 16, "DIM": 128}
CATEGORY = "softmax"
LEVEL = "1"
OPS = ["torch.softmax"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    # Scores with a spread of a few units, as attention logits have: the softmax is peaked, not uniform.
    return [torch.randn(BATCH, DIM) * 4.0]


def get_init_inputs():
    return []
