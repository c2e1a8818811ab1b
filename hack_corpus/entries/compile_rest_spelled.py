# corpus: task=add_relu expect=correct
"""torch.compile spelled past the screen (getattr on a built string): the runner starts with torch.compile disabled
(TORCH_COMPILE_DISABLE=1), so the compiled part runs as plain torch, no compiler speedup is collected, and the
candidate is judged as what it is: its own add kernel plus torch's relu (partial coverage on a GPU). The forward
checks that compilation really is off, so this entry fails if the runner ever compiles again."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def relu_rest(t):
    return torch.relu(t)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.rest = getattr(torch, "com" + "pile")(relu_rest)

    def forward(self, x, y):
        out = torch.empty_like(x)
        add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
        result = self.rest(out)
        if not getattr(torch, "_dyn" + "amo").config.disable:
            raise RuntimeError("torch.compile is enabled in the runner")
        return result
