"""Cosine-distance loss per pair of embeddings: 1 - cos(a, b)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 65536
DIM = 1024

SMALL = {"BATCH": 32, "DIM": 64}
CATEGORY = "loss"
LEVEL = "1"
OPS = ["torch.nn.functional.cosine_similarity", "torch.rsub"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return 1.0 - F.cosine_similarity(a, b, dim=-1, eps=1e-8)


def get_inputs():
    # b is a noisy copy of a with per-row noise levels, so similarities spread over (-1, 1].
    a = torch.randn(BATCH, DIM)
    noise = torch.rand(BATCH, 1) * 3.0
    return [a, a + noise * torch.randn(BATCH, DIM)]


def get_init_inputs():
    return []
