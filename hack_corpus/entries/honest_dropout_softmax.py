# corpus: task=linear_dropout_softmax expect=correct
"""Honest: the row softmax in Triton, the linear layer and the dropout as the reference has them. Dropout draws from
torch's generator, so the two sides agree only when every forward starts from the same generator state (KernelBench
seeds before each model call; the judge and the runner seed both sides the same way). Before they did, the problem's
own model was scored `incorrect` against itself."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        y = self.dropout(self.linear(x)).contiguous()
        out = torch.empty_like(y)
        softmax_rows_kernel[(y.shape[0],)](y, out, y.shape[1], BLOCK=triton.next_power_of_2(y.shape[1]))
        return out
