"""The ``softmax`` family: ``softmax`` (with a temperature) or ``log_softmax`` over the last dim. The flawed
answer pads with 0 instead of -inf, forgets the temperature, or subtracts the sum instead of its log."""

from __future__ import annotations

import random

from .programs import Program, candidate_program, fmt, reference_program, size_args
from .row_kernels import LOAD_ROW, STORE_ROW, row_kernel, row_launch, row_sizes
from .task import VARIANTS, SyntheticTask, make_task


def softmax_task(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["softmax"])
    temperature = rng.choice((1.0, 0.5, 2.0, 4.0))
    sizes = row_sizes(rng)
    call = "F.softmax" if variant == "softmax" else "F.log_softmax"
    forward = [f"return {call}(x / self.temperature, dim=-1)"]
    program = Program(
        doc=("Softmax" if variant == "softmax" else "Log-softmax")
        + " over the last dimension of x / temperature.",
        sizes=sizes,
        init_params=", temperature: float",
        init_inputs=fmt(temperature),
        ref_init=("self.temperature = temperature",),
        new_init=("self.temperature = temperature",),
        args="x",
        inputs=f"torch.randn({size_args(sizes)})",
    )

    def kernel(*, other: str = "float('-inf')", use_temperature: bool = True, take_log: bool = True) -> str:
        body = [LOAD_ROW.format(other=other)]
        if use_temperature:
            body.append("x = x / temperature")
        body += ["z = x - tl.max(x, axis=0)", "e = tl.exp(z)", "s = tl.sum(e, axis=0)"]
        if variant == "softmax":
            body.append("y = e / s")
        else:
            body.append("y = z - tl.log(s)" if take_log else "y = z - s")
        body.append(STORE_ROW)
        return row_kernel("temperature, ", body)

    host = row_launch("self.temperature, ", "x.shape", "torch.empty_like(x2)")
    flaws = [
        (
            kernel(other="0.0"),
            "Padded lanes were loaded as 0.0, so exp(0 - max) of every padding lane entered the row sum; they "
            "are loaded as -inf now, which contributes exp(-inf) = 0.",
        )
    ]
    if temperature != 1.0:
        flaws.append(
            (
                kernel(use_temperature=False),
                "The kernel forgot to divide by the temperature before the max; it does now.",
            )
        )
    if variant == "log_softmax":
        flaws.append(
            (
                kernel(take_log=False),
                "The kernel subtracted the row sum instead of its logarithm; it subtracts log(sum) now.",
            )
        )
    flawed, flaw = rng.choice(flaws)
    return make_task(
        "softmax",
        variant,
        seed,
        "1" if temperature == 1.0 else "2",
        (f"torch.nn.functional.{variant}", "torch.div"),
        reference_program(program, forward),
        candidate_program(program, kernel(), host),
        candidate_program(program, flawed, host),
        plan="One Triton program per row: a numerically stable softmax (subtract the row max, exponentiate, "
        "normalise) on one masked block whose padding is loaded as -inf.",
        flaw=flaw,
    )
