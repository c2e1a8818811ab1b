"""Known-answer Triton kernel, run once per worker before any candidate.

The Triton interpreter of old Triton releases silently writes nothing when used with numpy 2 (background §7): every
candidate would then look wrong, or a constant-zero answer right. A tiny add kernel with a known result proves the
installed Triton really executes kernels on this device before candidates are judged by it. Import this module
only after ``TRITON_INTERPRET`` has been decided (it imports triton).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _known_answer_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(
        out_ptr + offsets,
        tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
        mask=mask,
    )


def known_answer_check(device: torch.device) -> None:
    """Raise RuntimeError with a diagnosis if Triton does not compute 1..n + 2*(1..n) correctly on ``device``."""
    n = 100
    x = torch.arange(1, n + 1, dtype=torch.float32, device=device)
    y = 2 * x
    out = torch.zeros_like(x)
    _known_answer_add[(triton.cdiv(n, 64),)](x, y, out, n, BLOCK=64)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    if not torch.equal(out, 3 * x):
        import numpy

        raise RuntimeError(
            "Triton known-answer check failed: an add kernel wrote "
            f"{out[:4].tolist()}... instead of {(3 * x)[:4].tolist()}... on {device} "
            f"(triton {triton.__version__}, numpy {numpy.__version__}). Triton's interpreter before 3.4 writes "
            "nothing with numpy 2: install triton>=3.4 (3.6.0 with numpy<2.4 matches the GPU machine)."
        )
