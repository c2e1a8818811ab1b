"""The ``norm`` family: ``layer_norm`` (with or without affine) or ``rms_norm`` (with or without weight)
over the last dim. The flawed answer divides by the padded block, leaves padded lanes in the variance, or
forgets a parameter."""

from __future__ import annotations

import random

from .programs import Program, candidate_program, fmt, reference_program, size_args
from .row_kernels import LOAD_ROW, STORE_ROW, row_kernel, row_launch, row_sizes
from .task import VARIANTS, SyntheticTask, make_task


def norm_task(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["norm"])
    affine = rng.random() < 0.6
    eps = rng.choice((1e-5, 1e-6))
    sizes = row_sizes(rng)
    mult, shift = rng.choice((1.0, 2.0, 3.0)), rng.choice((0.0, 0.5, -1.0))
    ref_init = ["self.dim = dim", "self.eps = eps"]
    new_init = list(ref_init)
    if affine:  # non-trivial parameters, so a kernel cannot ignore them; same names so the judge copies them
        ref_init.append("self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(dim))")
        new_init.append("self.weight = nn.Parameter(torch.ones(dim))")
        if variant == "layer_norm":
            ref_init.append("self.bias = nn.Parameter(0.1 * torch.randn(dim))")
            new_init.append("self.bias = nn.Parameter(torch.zeros(dim))")
    if variant == "layer_norm":
        forward = [
            f"return F.layer_norm(x, (self.dim,), {'self.weight, self.bias' if affine else 'None, None'}, "
            "self.eps)"
        ]
        ops: tuple[str, ...] = ("torch.nn.functional.layer_norm",)
        doc = "Layer normalization over the last dimension" + (
            " with learned scale and shift." if affine else "."
        )
    else:
        forward = [
            "rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
            f"return x * rms{' * self.weight' if affine else ''}",
        ]
        ops = ("torch.pow", "torch.mean", "torch.rsqrt", "torch.mul")
        doc = "RMS normalization over the last dimension" + (" with a learned scale." if affine else ".")
    program = Program(
        doc=doc,
        sizes=sizes,
        init_params=", dim: int, eps: float",
        init_inputs=f"DIM, {eps!r}",
        ref_init=tuple(ref_init),
        new_init=tuple(new_init),
        args="x",
        inputs=f"torch.randn({size_args(sizes)}) * {fmt(mult)}"
        + (f" {'-' if shift < 0 else '+'} {fmt(abs(shift))}" if shift else ""),
    )

    def kernel(
        *, mask_diff: bool = True, divisor: str = "n_cols", use_bias: bool = True, use_weight: bool = True
    ) -> str:
        body = [LOAD_ROW.format(other="0.0")]
        if variant == "layer_norm":
            body += [
                f"mean = tl.sum(x, axis=0) / {divisor}",
                "d = tl.where(mask, x - mean, 0.0)" if mask_diff else "d = x - mean",
                f"var = tl.sum(d * d, axis=0) / {divisor}",
                "y = d / tl.sqrt(var + eps)",
            ]
        else:
            body += [f"ms = tl.sum(x * x, axis=0) / {divisor}", "y = x / tl.sqrt(ms + eps)"]
        if affine and use_weight:
            body.append("y = y * tl.load(w_ptr + cols, mask=mask, other=0.0)")
        if affine and variant == "layer_norm" and use_bias:
            body.append("y = y + tl.load(b_ptr + cols, mask=mask, other=0.0)")
        body.append(STORE_ROW)
        sig = ("w_ptr, b_ptr, " if variant == "layer_norm" else "w_ptr, ") if affine else ""
        return row_kernel(sig + "eps, ", body)

    args = ("self.weight, self.bias, " if variant == "layer_norm" else "self.weight, ") if affine else ""
    host = row_launch(args + "self.eps, ", "x.shape", "torch.empty_like(x2)")
    flaws = [
        (
            kernel(divisor="BLOCK"),
            "The statistics were divided by the padded block size BLOCK instead of the row length n_cols; they "
            "divide by n_cols now.",
        )
    ]
    if variant == "layer_norm":
        flaws.append(
            (
                kernel(mask_diff=False),
                "Padded lanes held x - mean = -mean and added mean^2 terms to the variance; the centred values "
                "are masked to 0 before the variance now.",
            )
        )
        if affine:
            flaws.append(
                (kernel(use_bias=False), "The kernel forgot to add the bias; it is added after the scale.")
            )
    elif affine:
        flaws.append(
            (kernel(use_weight=False), "The kernel forgot to multiply by the learned weight; it does now.")
        )
    flawed, flaw = rng.choice(flaws)
    return make_task(
        "norm",
        variant,
        seed,
        "1",
        ops,
        reference_program(program, forward),
        candidate_program(program, kernel(), host),
        candidate_program(program, flawed, host),
        plan="One Triton program per row: the row is loaded once as a masked block, the statistics are reduced "
        "in fp32 registers, and the normalized row is written back in the same pass.",
        flaw=flaw,
    )
