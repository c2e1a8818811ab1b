"""Coverage (PR) of one candidate: asked of the runner after timing, bounded and checked against the floor.

The runner measures it (``coverage_self_reported`` in every result): the judge clips what it reports to [0, 1] and
never lets it make a wrong answer right.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kernel_reward.common.tensors import make_inputs, synchronize
from kernel_reward.ipc.runner_channel import RunnerClient
from kernel_reward.judge.remote import (
    RemoteCandidate,
    place_input_sets,
)
from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, KernelTiming


def below_coverage_floor(coverage: float | None, floor: float | None) -> str | None:
    """Pure: the reason a correct candidate fails strict mode (coverage under ``floor``), or None."""
    if floor is None or coverage is None or coverage >= floor:
        return None
    return (
        f"coverage {coverage:.3f} is below the strict-mode floor {floor:g}: most of the device time is not the "
        "candidate's own Triton kernels (a kernel wrapped around a torch answer)"
    )


def measure_coverage(
    client: RunnerClient,
    candidate: RemoteCandidate,
    reference_module: Any,
    device: torch.device,
    options: EvalOptions,
    result: EvalResult,
    phases: Any,
    seeds: list[int],
) -> None:
    """PR from the runner's own measurement (the judge cannot see inside its process): flagged as self-reported,
    clipped to [0, 1], and a failure only flags."""
    with phases("profile"):
        inputs = place_input_sets(
            candidate.arena,
            [lambda seed=seed: make_inputs(reference_module, seed, device) for seed in seeds[-2:]],
        )
        synchronize(device)
        reply = client.ask(
            {
                "type": "coverage",
                "model": candidate.model_id,
                "inputs": inputs,
                "calls": options.profile_calls,
                "method": options.coverage_method,
            },
            ("coverage", "error"),
        )
    coverage_from_reply(reply, result)


def coverage_from_reply(reply: dict[str, Any], result: EvalResult) -> None:
    """Take the runner's coverage as a claim: clipped to [0, 1], malformed rows dropped, flagged."""
    if reply.get("type") != "coverage":
        result.flags.append(f"profile_failed: {str(reply.get('error'))[:300]}")
        return
    result.flags.append("coverage_self_reported")
    if reply.get("flag"):
        result.flags.append(str(reply["flag"])[:300])
    coverage = _finite(reply.get("coverage"))
    if coverage is not None:
        result.coverage = min(max(coverage, 0.0), 1.0)
    rows = reply.get("table") if isinstance(reply.get("table"), list) else []
    result.kernel_table = [
        timing for timing in map(_kernel_timing, rows[:MAX_TABLE_ROWS]) if timing is not None
    ]


MAX_TABLE_ROWS = 50
MAX_CALLS = 10**9  # far beyond any profiled run's kernel launches


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a real, finite number (not a bool, a string or NaN); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value) if abs(value) < 1e300 else math.inf
    return number if math.isfinite(number) else None


def _kernel_timing(row: Any) -> KernelTiming | None:
    """One row of the runner's kernel table, or None when any field is missing or impossible."""
    if not isinstance(row, dict):
        return None
    time_ms, calls = _finite(row.get("device_time_ms")), _finite(row.get("calls"))
    if time_ms is None or time_ms < 0 or calls is None or not 0 <= calls <= MAX_CALLS or calls != int(calls):
        return None
    return KernelTiming(str(row.get("name"))[:200], time_ms, int(calls), bool(row.get("from_candidate")))
