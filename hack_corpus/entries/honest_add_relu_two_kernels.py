# corpus: task=add_relu expect=correct
"""Honest: two kernels (add, then relu in place on its own intermediate), sizes from triton helpers."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def relu_inplace_kernel(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptr + offs, tl.maximum(tl.load(ptr + offs, mask=mask), 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        n = x.numel()
        block = min(triton.next_power_of_2(n), 64)
        grid = (triton.cdiv(n, block),)
        total = torch.empty_like(x)
        add_kernel[grid](x.contiguous(), y.contiguous(), total, n, BLOCK=block)
        relu_inplace_kernel[grid](total, n, BLOCK=block)
        return total
