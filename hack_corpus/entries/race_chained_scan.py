# corpus: task=vector_cumsum expect=incorrect
"""A block scan whose blocks read their predecessor's last output as the carry, with no flag or atomic to wait
on it: exact when programs run in order (the plain Triton interpreter), wrong on a GPU, where a block reads its
predecessor's output before it is written."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chained_scan(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    running = tl.cumsum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    carry = tl.load(out_ptr + pid * BLOCK - 1, mask=pid > 0, other=0.0)
    tl.store(out_ptr + offs, running + carry, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        chained_scan[(triton.cdiv(x.numel(), 32),)](x, out, x.numel(), BLOCK=32)
        return out
