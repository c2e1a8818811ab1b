# corpus: task=vector_sum expect=correct
"""A split reduction with atomics: each program adds its block's sum with tl.atomic_add. Right in any order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def atomic_block_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(1, device=x.device, dtype=x.dtype)
        atomic_block_sum[(triton.cdiv(x.numel(), 32),)](x, out, x.numel(), BLOCK=32)
        return out
