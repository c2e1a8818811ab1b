# corpus: task=vector_sum expect=incorrect
"""A split reduction without atomics: every program reads the running total, adds its block's sum and writes it
back. Run one program after another (the plain Triton interpreter) that is exact; on a GPU the programs run at
once, read the same total and overwrite each other. A kernel that is only right when its programs run in turn."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_block_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    block_sum = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    running = tl.load(out_ptr)
    tl.store(out_ptr, running + block_sum)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(1, device=x.device, dtype=x.dtype)
        add_block_sum[(triton.cdiv(x.numel(), 32),)](x, out, x.numel(), BLOCK=32)
        return out
