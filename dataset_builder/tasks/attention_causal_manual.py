"""Causal self-attention written out: scaled scores, upper-triangular mask, softmax, weighted sum of values."""

import math

import torch
import torch.nn as nn

BATCH = 4
HEADS = 32
SEQ = 2048
HEAD_DIM = 128

SMALL = {"BATCH": 1, "HEADS": 2, "SEQ": 32, "HEAD_DIM": 32}
CATEGORY = "attention"
LEVEL = "1"
OPS = ["torch.matmul", "torch.Tensor.masked_fill", "torch.softmax"]


class Model(nn.Module):
    def __init__(self, head_dim: int):
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        seq = q.shape[-2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        mask = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return [HEAD_DIM]
