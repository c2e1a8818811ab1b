"""Tiny reference/candidate programs for the execution-service tests (one Triton program instance each)."""

REFERENCE_ADD = """
import torch
import torch.nn as nn

N = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a + b


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
"""

CANDIDATE_ADD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask) + tl.load(b_ptr + offsets, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)
        return out
"""

# Wrong arithmetic: a - b instead of a + b.
CANDIDATE_WRONG = CANDIDATE_ADD.replace(
    "tl.load(a_ptr + offsets, mask=mask) + tl.load", "tl.load(a_ptr + offsets, mask=mask) - tl.load"
)

CANDIDATE_SYNTAX_ERROR = CANDIDATE_ADD.replace("def forward(self, a, b):", "def forward(self, a, b)")

# The "kernel, else torch" fallback shape: rejected by the static checks before it runs.
CANDIDATE_TRY_EXCEPT = CANDIDATE_ADD.replace(
    "        out = torch.empty_like(a)\n        n = a.numel()\n        add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)\n        return out",
    "        try:\n            out = torch.empty_like(a)\n            add_kernel[(triton.cdiv(a.numel(), 128),)](a, b, out, a.numel(), BLOCK=128)\n"
    "            return out\n        except Exception:\n            return a + b",
)

# Raises inside forward.
CANDIDATE_RAISES = CANDIDATE_ADD.replace("out = torch.empty_like(a)", "raise ValueError('boom from forward')")

# Passthrough to torch: no Triton launch at all.
CANDIDATE_PASSTHROUGH = CANDIDATE_ADD.replace(
    "out = torch.empty_like(a)\n        n = a.numel()\n        add_kernel[(triton.cdiv(n, 128),)](a, b, out, n, BLOCK=128)\n        return out",
    "return torch.add(a, b)",
)


def fenced(code: str) -> str:
    """A completion as a model writes it: prose plus a fenced python block."""
    return f"Here is my kernel.\n\n```python\n{code}\n```\n"


# Reads far out of bounds without a mask: under the interpreter the load dereferences unmapped memory and the
# process dies (on a GPU: an illegal memory access that poisons the CUDA context).
CANDIDATE_OOB_CRASH = CANDIDATE_ADD.replace(
    "tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask)",
    "tl.store(out_ptr + offsets, tl.load(a_ptr + offsets + (1 << 40))",
)

# Never finishes: a Python loop in forward (on a GPU the same loop inside a kernel is a hung kernel).
CANDIDATE_HANGS = CANDIDATE_ADD.replace("out = torch.empty_like(a)", "while True:\n            pass")
