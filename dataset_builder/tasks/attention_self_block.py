"""Multi-head self-attention block: fused QKV projection, causal scaled dot-product attention, output projection.

The embedding width is HEADS * HEAD_DIM, so every size constant can change on its own.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 1024
HEADS = 16
HEAD_DIM = 64

SMALL = {"BATCH": 1, "SEQ": 16, "HEADS": 2, "HEAD_DIM": 16}
CATEGORY = "attention"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.nn.functional.scaled_dot_product_attention"]


class Model(nn.Module):
    def __init__(self, heads: int, head_dim: int):
        super().__init__()
        self.heads = heads
        self.head_dim = head_dim
        embed = heads * head_dim
        self.qkv = nn.Linear(embed, 3 * embed)
        self.out = nn.Linear(embed, embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, embed = x.shape
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attn.transpose(1, 2).reshape(batch, seq, embed))


def get_inputs():
    return [torch.randn(BATCH, SEQ, HEADS * HEAD_DIM)]


def get_init_inputs():
    return [HEADS, HEAD_DIM]
