"""The ``reduction`` family: sum / mean / amax over the last dim, with an optional pre-op (abs, square) and
scale; variant = the reduction. The flawed answer mishandles the padding, the divisor, the pre-op or the
scale."""

from __future__ import annotations

import random

from .programs import Program, candidate_program, fmt, reference_program, size_args
from .row_kernels import LOAD_ROW, row_kernel, row_launch, row_sizes
from .task import VARIANTS, SyntheticTask, make_task


def reduction_task(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["reduction"])
    pre = rng.choice((None, "abs", "square"))
    scale = rng.choice((None, 0.5, 2.0, -1.5))
    if variant == "amax" and pre is None and scale is None:
        scale = 0.25  # so the flawed answer has something to forget
    keepdim = rng.random() < 0.5
    sizes = row_sizes(rng)
    torch_pre = {None: "x", "abs": "torch.abs(x)", "square": "x * x"}[pre]
    tl_pre = {None: "x", "abs": "tl.abs(x)", "square": "x * x"}[pre]
    call = {"sum": "torch.sum", "mean": "torch.mean", "amax": "torch.amax"}[variant]
    expr = f"{call}({torch_pre}, dim=-1{', keepdim=True' if keepdim else ''})"
    forward = [f"return {expr}" + (f" * {fmt(scale)}" if scale is not None else "")]
    words = {"sum": "Sum", "mean": "Mean", "amax": "Maximum"}[variant]
    what = {None: "x", "abs": "|x|", "square": "x^2"}[pre]
    program = Program(
        doc=f"{words} of {what} over the last dimension{' (kept)' if keepdim else ''}"
        + (f", scaled by {fmt(scale)}." if scale is not None else "."),
        sizes=sizes,
        init_params="",
        init_inputs="",
        ref_init=(),
        new_init=(),
        args="x",
        inputs=f"torch.randn({size_args(sizes)})",
    )
    fill = "float('-inf')" if variant == "amax" else "0.0"
    reduce = "tl.max" if variant == "amax" else "tl.sum"

    def kernel(
        *,
        pre_op: str = tl_pre,
        other: str = "0.0",
        mask_fill: bool = True,
        divisor: str = "n_cols",
        scaled: bool = True,
    ) -> str:
        body = [LOAD_ROW.format(other=other), f"v = {pre_op}"]
        if mask_fill:
            body.append(f"v = tl.where(mask, v, {fill})")
        body.append(f"r = {reduce}(v, axis=0)")
        if variant == "mean":
            body.append(f"r = r / {divisor}")
        if scale is not None and scaled:
            body.append(f"r = r * {fmt(scale)}")
        body.append("tl.store(out_ptr + row, r)")
        return row_kernel("", body)

    out_shape = "x.shape[:-1] + (1,)" if keepdim else "x.shape[:-1]"
    host = row_launch("", out_shape, "torch.empty(rows, device=x.device, dtype=x.dtype)")
    flaws = []
    if variant == "mean":
        flaws.append(
            (
                kernel(divisor="BLOCK"),
                "The mean divided by the padded block size BLOCK instead of the row length n_cols; it divides "
                "by n_cols now.",
            )
        )
    if variant == "sum":
        flaws.append(
            (
                kernel(other="1.0", mask_fill=False),
                "Padded lanes past the row end were loaded as 1.0 and summed; they are loaded as 0.0 and "
                "masked out of the sum now.",
            )
        )
    if pre is not None:
        flaws.append(
            (
                kernel(pre_op="x"),
                f"The kernel reduced x itself and forgot to take {what} first; the {pre} step is back.",
            )
        )
    if scale is not None:
        flaws.append(
            (
                kernel(scaled=False),
                f"The kernel forgot the final scale by {fmt(scale)}; it multiplies the result now.",
            )
        )
    flawed, flaw = rng.choice(flaws)
    return make_task(
        "reduction",
        variant,
        seed,
        "2" if pre or scale is not None else "1",
        tuple(
            o
            for o in (
                call,
                "torch.abs" if pre == "abs" else None,
                "torch.mul" if pre == "square" or scale is not None else None,
            )
            if o
        ),
        reference_program(program, forward),
        candidate_program(program, kernel(), host),
        candidate_program(program, flawed, host),
        plan="One Triton program per row: it loads the whole row as one masked block (padded to a power of two, "
        "padding neutralised), reduces it in registers and writes one value.",
        flaw=flaw,
    )
