"""Multi-head scaled dot-product attention (non-causal) on pre-split query, key and value tensors."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
HEADS = 16
SEQ = 1024
HEAD_DIM = 64

SMALL = {"BATCH": 1, "HEADS": 2, "SEQ": 32, "HEAD_DIM": 32}
CATEGORY = "attention"
LEVEL = "1"
OPS = ["torch.nn.functional.scaled_dot_product_attention"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
