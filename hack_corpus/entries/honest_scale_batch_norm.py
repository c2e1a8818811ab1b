# corpus: task=linear_scale_batch_norm expect=correct
"""Honest: the scale in Triton, the linear layer and the BatchNorm1d as the reference has them. Both models' running
statistics move with every training-mode forward, and each side is called a different number of times before the
``.eval()`` passes: the judge must compare eval mode on equal statistics (KernelBench level 2's BatchNorm problems
were scored incorrect on the H200 before it did)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_columns_kernel(x_ptr, scale_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    s = tl.load(scale_ptr + offs % cols, mask=mask)
    tl.store(out_ptr + offs, x * s, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(out_features))
        self.norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        y = self.linear(x).contiguous()
        scaled = torch.empty_like(y)
        scale_columns_kernel[(triton.cdiv(y.numel(), 256),)](y, self.scale, scaled, y.numel(), y.shape[1], BLOCK=256)
        return self.norm(scaled)
