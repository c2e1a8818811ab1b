"""Interpreter shims: honest kernels that run on the GPU must run the same under the CPU interpreter.

Each case is a small honest candidate in the shape production Triton code uses (liger-kernel 0.8.5 does both):
a plain float kernel argument used as a scalar tensor (``eps.to(tl.float32)``: on the GPU a float argument IS an
fp32 scalar tensor; the bare interpreter passes a Python float, which has no ``.to``), and ``libdevice`` math
(the generic ``triton.language.extra.libdevice`` functions are stubs the GPU compiler swaps for the backend's;
the bare interpreter calls the stub and gets ``None``). Without the shims both were ``runtime_error`` on CPU.
"""

from __future__ import annotations

import pytest

REFERENCE = """
import torch
import torch.nn as nn

N = 300


class Model(nn.Module):
    def forward(self, x):
        return {expression}


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
"""

CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
{imports}


@triton.jit
def kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, {body}, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), 0.5, BLOCK=128)
        return out
"""

CASES = {
    "float_argument_to": ("", "x * scale.to(tl.float32)", "x * 0.5"),
    "libdevice_module_tanh": (
        "from triton.language.extra import libdevice",
        "libdevice.tanh(x) * scale",
        "torch.tanh(x) * 0.5",
    ),
    "libdevice_imported_names": (
        "from triton.language.extra.libdevice import rsqrt, tanh, pow",
        "tanh(x) + rsqrt(x * x + 1.0) + pow(x * x, scale)",
        "torch.tanh(x) + torch.rsqrt(x * x + 1.0) + (x * x) ** 0.5",
    ),
    "cuda_libdevice_module": (
        "from triton.language.extra.cuda import libdevice",
        "libdevice.tanh(x) - libdevice.exp(x)",
        "torch.tanh(x) - torch.exp(x)",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_semantics_run_under_the_interpreter(name, evaluate_subprocess):
    imports, body, expression = CASES[name]
    result = evaluate_subprocess(
        REFERENCE.format(expression=expression), CANDIDATE.format(imports=imports, body=body), device="cpu"
    )
    assert result.mode == "interpreter"
    assert result.status.value == "correct", (result.status, (result.error or "")[-1500:])


def test_libdevice_function_without_interpreter_version_names_the_gap(evaluate_subprocess):
    """A libdevice function the shim has no CPU version of fails with a message naming the interpreter gap (not an
    opaque ``None`` arithmetic error deep in the kernel), and the result says it is the interpreter's limit:
    ``interpreter_unsupported`` (scored all the same: the runner's text could be forged, see below)."""
    result = evaluate_subprocess(
        REFERENCE.format(expression="x"),
        CANDIDATE.format(
            imports="from triton.language.extra import libdevice", body="libdevice.nextafter(x, x)"
        ),
        device="cpu",
    )
    assert result.status.value == "interpreter_unsupported" and result.scored, (result.status, result.scored)
    assert "libdevice.nextafter has no implementation under the Triton interpreter" in result.error, (
        result.error[-1500:]
    )


def test_a_forged_interpreter_gap_gains_the_candidate_nothing(evaluate_subprocess):
    """The gap is recognised from error text the runner sends, and the runner runs the candidate's code: a wrong
    candidate that raises the gap's message itself must not escape its verdict. It may read
    ``interpreter_unsupported`` (the label is only a hint), but it stays scored, with a failure's reward."""
    forged = CANDIDATE.format(imports="", body="x").replace(
        "        out = torch.empty_like(x)\n",
        "        raise NotImplementedError('libdevice.erf has no implementation under the Triton interpreter')\n",
    )
    result = evaluate_subprocess(REFERENCE.format(expression="x"), forged, device="cpu")
    assert result.status.value in ("interpreter_unsupported", "runtime_error"), result.status
    assert result.scored and result.reward == 0.0, (result.scored, result.reward)
