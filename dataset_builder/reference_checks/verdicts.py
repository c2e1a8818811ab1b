"""What a reference check concludes: the problem kinds, the verdict, and the pure rules behind them.

``classify_outputs`` turns the output statistics a child reported (``child.OutputStats``) into problems, using
the thresholds below; the reasoning is the evaluator's correctness test, allclose with atol = rtol = tol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from kernel_reward.judge.reference_run import OutputStats

from ..checks import DropReason  # the one enum of why a task is unusable (its runtime reasons)

# near_constant: an output whose standard deviation is below this fraction of its RMS is one value almost
# everywhere, so a kernel that fills the output with a single constant passes for (nearly) every element.
NEAR_CONSTANT_REL_STD = 1e-3

# input_independent: outputs for two independent random inputs that differ by no more than
# tol + INPUT_DEPENDENCE_REL * max|y| mean a hard-coded (cached) output would pass: 1e-3 is ten times the fp32
# rtol, so "barely changes" is caught too, not only "bit-identical".
INPUT_DEPENDENCE_REL = 1e-3

# nondeterministic: two forward passes on identical inputs may differ by float reassociation noise at most
# (~1e-7 relative in fp32); CPU kernels are deterministic, so anything above 1e-6 relative means randomness
# (dropout in training mode, torch.rand in forward) or hidden state that changes between calls.
NONDETERMINISM_REL = 1e-6


def tolerance_for(dtype: str) -> float:
    """The evaluator's default tolerance for an output dtype name such as ``"float32"``: the larger of its atol and
    rtol (the lenient side decides whether a constant could pass), read from ``kernel_reward.EvalOptions`` so the
    two cannot drift; 0 for integer / bool outputs, which it compares exactly."""
    name = dtype.removeprefix("torch.")
    if name not in ("float64", "float32", "float16", "bfloat16"):
        return 0.0
    from kernel_reward.options import EvalOptions

    return max(EvalOptions().tolerance(name))


@dataclass
class ReferenceCheck:
    """Verdict on one reference program. ``ok`` only when it ran to the end with no problem (fail closed)."""

    ok: bool = False
    problems: list[DropReason] = field(default_factory=list)
    details: str = ""
    seconds: float = 0.0
    outputs: list[OutputStats] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["problems"] = [p.value for p in self.problems]
        return data


def classify_outputs(
    outputs: Sequence[OutputStats], *, inputs_identical: bool = False
) -> list[tuple[DropReason, str]]:
    """Problems shown by the output statistics of one reference, each with a one-line reason.

    Args:
        outputs: one entry per output tensor (empty when forward returned no tensor).
        inputs_identical: ``get_inputs()`` returned the same tensors under both seeds (mentioned in the reason).

    Returns:
        ``(kind, reason)`` pairs, at most one per kind, in a fixed order; empty when the outputs look usable.
    """
    if not outputs:
        return [(DropReason.NO_TENSOR_OUTPUT, "forward returned no tensor")]
    found: dict[DropReason, str] = {}

    def add(kind: DropReason, reason: str) -> None:
        found.setdefault(kind, reason)

    for out in outputs:
        tol = tolerance_for(out.dtype)
        name = f"output {out.index} {out.dtype}{list(out.shape)}"
        if not out.finite:
            add(DropReason.NON_FINITE, f"{name} holds NaN or Inf")
            continue  # differences and spreads of non-finite values mean nothing
        if out.repeat_max_abs_diff > NONDETERMINISM_REL * out.max_abs:
            add(
                DropReason.NONDETERMINISTIC,
                f"{name}: two calls on identical inputs differ by up to {out.repeat_max_abs_diff:.3g}",
            )
        if out.other_input_max_abs_diff <= tol + INPUT_DEPENDENCE_REL * out.max_abs:
            why = " (get_inputs() returned the same inputs under both seeds)" if inputs_identical else ""
            add(
                DropReason.INPUT_INDEPENDENT,
                f"{name}: outputs for two different inputs differ by only {out.other_input_max_abs_diff:.3g}{why}",
            )
        if out.max_abs <= tol:
            add(
                DropReason.NEAR_CONSTANT,
                f"{name}: all |y| <= {out.max_abs:.3g}, so an all-zeros output passes",
            )
        elif out.numel > 1 and out.std <= NEAR_CONSTANT_REL_STD * out.rms:
            add(
                DropReason.NEAR_CONSTANT,
                f"{name}: std {out.std:.3g} is tiny against RMS {out.rms:.3g}, so a constant fill nearly passes",
            )
    order = list(DropReason)
    return sorted(found.items(), key=lambda item: order.index(item[0]))
