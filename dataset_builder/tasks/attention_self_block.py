"""Multi-head self-attention block: fused QKV projection, scaled dot-product attention, output projection."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
SEQ = 1024
EMBED = 1024
HEADS = 16

SMALL = {"BATCH": 1, "SEQ": 16, "EMBED": 32, "HEADS": 2}
CATEGORY = "attention"
LEVEL = "2"
OPS = ["torch.nn.Linear", "torch.nn.functional.scaled_dot_product_attention"]


class Model(nn.Module):
    def __init__(self, embed: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(embed, 3 * embed)
        self.out = nn.Linear(embed, embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, embed = x.shape
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, embed // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, seq, head_dim)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(attn.transpose(1, 2).reshape(batch, seq, embed))


def get_inputs():
    return [torch.randn(BATCH, SEQ, EMBED)]


def get_init_inputs():
    return [EMBED, HEADS]
