# corpus: task=vector_sum expect=correct
"""A split reduction done right: each program takes a spin lock (atomic compare-and-swap), adds its block's sum
to the total and releases the lock (atomic exchange). The atomics order the programs' plain loads and stores, so
this is right on a GPU, and must stay right under an interpreter that runs programs out of order."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def locked_block_sum(x_ptr, out_ptr, lock_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    block_sum = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + block_sum)
    tl.atomic_xchg(lock_ptr, 0)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(1, device=x.device, dtype=x.dtype)
        lock = torch.zeros(1, device=x.device, dtype=torch.int32)
        locked_block_sum[(triton.cdiv(x.numel(), 32),)](x, out, lock, x.numel(), BLOCK=32)
        return out
