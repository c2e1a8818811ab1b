"""L2-normalize embedding vectors along the last dimension (F.normalize)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 65536
DIM = 768

SMALL = {"BATCH": 16, "DIM": 128}
CATEGORY = "norm"
LEVEL = "1"
OPS = ["torch.nn.functional.normalize"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.normalize(x, p=2.0, dim=-1, eps=1e-12)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
