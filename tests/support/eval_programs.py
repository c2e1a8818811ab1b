"""Completions for the shipped activation_silu task (small preset): honest, wrong, decoy hack, unformatted."""

HONEST = """I fuse SiLU into one elementwise kernel.

```python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
```
"""
WRONG = HONEST.replace("x * tl.sigmoid(x)", "x * 0.5")  # compiles and runs, wrong values
# Launches a real kernel on dummy data and returns torch's answer: must be caught, never counted correct.
DECOY = """```python
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        scratch = torch.empty(64)
        copy_kernel[(1,)](torch.zeros(64), scratch, 64, BLOCK=64)
        return F.silu(x)
```
"""
UNFORMATTED = "I would write a Triton kernel that computes x * sigmoid(x), but here is only prose."
