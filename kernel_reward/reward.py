"""Reward schemes: pure functions from a verdict (status, speedup, coverage) to a float. No torch, no state.

Schemes (background §3), C = 1 if the candidate is correct and not hacked, else 0; s = speedup; PR = coverage:

* ``drkernel`` (released recipe): ``C * (w_correct + w_speed * min(s, cap) + w_coverage * PR)``,
  weights 0.5 / 0.5 / 0.5, cap 3. Failures get 0.
* ``paper``: the unscaled form ``C + C * min(s, cap) + C * PR`` (weights 1).
* ``ladder``: discrete steps: compile failure -0.5, incorrect -0.3, slower than the reference -0.1,
  >= 1.0x 0.2, >= 1.2x 0.4, >= 1.5x 0.6, >= 2x 0.8, >= 3x 1.0.
* ``correctness``: ``C * correct_value`` (1.0). The CPU / interpreter mode falls back to this scheme for every
  other scheme, because speedup and coverage cannot be measured there; the result reports the scheme used.

A hacked candidate gets ``hacked_penalty`` (0 by default, configurable negative) or the scheme's worst honest
failure, whichever is lower: a hack never pays more than the failure it hides. ``validate_reward_params`` refuses
ladder parameters that break the order failure < slow < fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Parameters each scheme accepts, with their defaults. ``reward_params`` may override any of these, nothing else.
SCHEME_PARAMS: dict[str, dict[str, float]] = {
    "drkernel": {"w_correct": 0.5, "w_speed": 0.5, "w_coverage": 0.5, "speedup_cap": 3.0},
    "paper": {"w_correct": 1.0, "w_speed": 1.0, "w_coverage": 1.0, "speedup_cap": 3.0},
    "ladder": {"compile_error": -0.5, "incorrect": -0.3, "slower": -0.1},
    "correctness": {"correct_value": 1.0},
}

# (threshold, reward) rungs of the ladder, highest first.
LADDER_RUNGS: tuple[tuple[float, float], ...] = ((3.0, 1.0), (2.0, 0.8), (1.5, 0.6), (1.2, 0.4), (1.0, 0.2))

_COMPILE_FAILURES = frozenset({"format_error", "compile_error"})
# Every status an honest candidate can fail with (``Status`` values, hacked and correct excluded).
HONEST_FAILURES = (
    "format_error",
    "compile_error",
    "runtime_error",
    "timeout",
    "crashed",
    "incorrect",
    "interpreter_unsupported",
)


@dataclass(frozen=True)
class RewardOutcome:
    """The reward and the scheme that actually produced it (may differ from the requested one on CPU)."""

    reward: float
    scheme: str


def validate_reward_params(scheme: str, params: dict[str, float]) -> None:
    """Raise ValueError naming the offending key when ``params`` does not fit ``scheme``."""
    if scheme not in SCHEME_PARAMS:
        raise ValueError(f"unknown reward scheme {scheme!r}; choose one of {sorted(SCHEME_PARAMS)}")
    allowed = SCHEME_PARAMS[scheme]
    for key, value in params.items():
        if key not in allowed:
            raise ValueError(f"reward scheme {scheme!r} has no parameter {key!r}; it takes {sorted(allowed)}")
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"reward parameter {key!r} must be a finite number, got {value!r}")
    if params.get("speedup_cap", 1.0) <= 0:
        raise ValueError(f"reward parameter 'speedup_cap' must be > 0, got {params['speedup_cap']!r}")
    if scheme == "ladder":
        _check_ladder_order({**SCHEME_PARAMS["ladder"], **params})


def _check_ladder_order(merged: dict[str, float]) -> None:
    """compile_error <= incorrect <= 0, and incorrect < slower < the lowest rung: no failure pays, a wrong answer
    never pays less than no code, and a correct kernel pays more than any failure and less than a faster one."""
    lowest_rung = min(value for _, value in LADDER_RUNGS)
    if merged["compile_error"] > 0 or merged["incorrect"] > 0:
        bad = "compile_error" if merged["compile_error"] > 0 else "incorrect"
        raise ValueError(f"ladder parameter {bad!r} must be <= 0 (a failure never pays), got {merged[bad]!r}")
    if merged["incorrect"] < merged["compile_error"]:
        raise ValueError(
            f"ladder parameter 'incorrect' ({merged['incorrect']!r}) must be >= 'compile_error' "
            f"({merged['compile_error']!r}): code that runs wrong is not worse than no code"
        )
    if not merged["incorrect"] < merged["slower"] < lowest_rung:
        raise ValueError(
            f"ladder parameter 'slower' ({merged['slower']!r}) must lie between 'incorrect' "
            f"({merged['incorrect']!r}) and the lowest speed rung ({lowest_rung!r})"
        )


def scheme_params(scheme: str, overrides: dict[str, float] | None = None) -> dict[str, float]:
    """The scheme's defaults with ``overrides`` applied (validated)."""
    overrides = overrides or {}
    validate_reward_params(scheme, overrides)
    return {**SCHEME_PARAMS[scheme], **overrides}


def drkernel_reward(correct: bool, speedup: float, coverage: float, params: dict[str, float]) -> float:
    """Weighted correctness + capped speedup + coverage; 0 unless correct."""
    if not correct:
        return 0.0
    capped = min(max(speedup, 0.0), params["speedup_cap"])
    return params["w_correct"] + params["w_speed"] * capped + params["w_coverage"] * _clip01(coverage)


def ladder_reward(status: str, speedup: float | None, params: dict[str, float]) -> float:
    """Discrete reward by how far the candidate got and how fast it is."""
    if status in _COMPILE_FAILURES:
        return params["compile_error"]
    if status != "correct":
        return params["incorrect"]
    if speedup is None:
        raise ValueError("ladder_reward needs a speedup for a correct candidate")
    for threshold, value in LADDER_RUNGS:
        if speedup >= threshold:
            return value
    return params["slower"]


def compute_reward(
    scheme: str,
    *,
    status: str,
    speedup: float | None,
    coverage: float | None,
    hacked: bool,
    timing_available: bool = True,
    hacked_penalty: float = 0.0,
    params: dict[str, float] | None = None,
) -> RewardOutcome:
    """Reward of one evaluated candidate.

    ``status`` is the ``Status`` value string. ``timing_available`` says whether this evaluation mode can time
    kernels at all (False on the CPU interpreter): then every scheme falls back to ``correctness``. A correct
    candidate in a timed mode must come with a speedup. Without coverage the coverage term counts as 0 and the
    returned scheme name says so (``-nocov``).
    """
    if hacked or status == "hacked":
        floor = worst_honest_failure(scheme, timing_available=timing_available, params=params)
        return RewardOutcome(min(float(hacked_penalty), floor), scheme)
    correct = status == "correct"
    if scheme == "correctness" or not timing_available:
        merged = scheme_params("correctness", params if scheme == "correctness" else None)
        return RewardOutcome(merged["correct_value"] if correct else 0.0, "correctness")
    merged = scheme_params(scheme, params)
    if correct and speedup is None:
        raise ValueError(f"scheme {scheme!r}: a correct candidate in a timed mode needs a speedup")
    if scheme == "ladder":
        return RewardOutcome(ladder_reward(status, speedup, merged), scheme)
    # drkernel / paper share one formula with different weights.
    if not correct:
        return RewardOutcome(0.0, scheme)
    name = scheme if coverage is not None else f"{scheme}-nocov"
    return RewardOutcome(drkernel_reward(correct, float(speedup), coverage or 0.0, merged), name)


def _clip01(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def worst_honest_failure(
    scheme: str, *, timing_available: bool = True, params: dict[str, float] | None = None
) -> float:
    """The lowest reward ``scheme`` pays an honest failure in this mode: the most a hacked candidate may get."""
    return min(
        compute_reward(
            scheme,
            status=status,
            speedup=None,
            coverage=None,
            hacked=False,
            timing_available=timing_available,
            params=params,
        ).reward
        for status in HONEST_FAILURES
    )
