"""Coverage (PR) of one candidate: asked of the runner after timing, bounded and checked against the floor.

The runner measures the per-kernel device times (``coverage_self_reported`` in every result); the judge decides
which rows are the candidate's own and computes the share itself. A row is own only when the runner says the
candidate launched it AND its name is one of the ``@triton.jit`` functions the judge read in the extracted source
(``screen.static_checks.triton_function_names``), so neither a forged coverage number nor a forged owner flag is
taken. The numbers never make a wrong answer right.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from kernel_reward.common.tensors import make_inputs, synchronize
from kernel_reward.judge.remote import (
    RemoteCandidate,
    place_input_sets,
)
from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, KernelTiming, coverage_from_table


def below_coverage_floor(coverage: float | None, floor: float | None) -> str | None:
    """Pure: the reason a correct candidate fails strict mode (coverage under ``floor``), or None."""
    if floor is None or coverage is None or coverage >= floor:
        return None
    return (
        f"coverage {coverage:.3f} is below the strict-mode floor {floor:g}: most of the device time is not the "
        "candidate's own Triton kernels (a kernel wrapped around a torch answer)"
    )


def measure_coverage(
    candidate: RemoteCandidate,
    reference_module: Any,
    device: torch.device,
    options: EvalOptions,
    result: EvalResult,
    phases: Any,
    seeds: list[int],
    own_names: frozenset[str],
) -> None:
    """PR from the runner's per-kernel times (the judge cannot see inside its process), owned by the judge's
    reading of the source (``own_names``): flagged as self-reported, and a failure only flags."""
    with phases("profile"):
        inputs = place_input_sets(
            candidate.arena,
            [lambda seed=seed: make_inputs(reference_module, seed, device) for seed in seeds[-2:]],
        )
        synchronize(device)
        reply = candidate.client.ask(
            {
                "type": "coverage",
                "model": candidate.model_id,
                "inputs": inputs,
                "calls": options.profile_calls,
                "method": options.coverage_method,
            },
            ("coverage", "error"),
        )
    coverage_from_reply(reply, result, own_names)


def coverage_from_reply(reply: dict[str, Any], result: EvalResult, own_names: frozenset[str]) -> None:
    """The runner's kernel table as claims: malformed rows dropped, each row's owner decided by ``own_names``
    (and the runner's flag: both must say own), coverage computed here from the rows. The runner's own coverage
    number is only compared: where it differs from the judge's, or where the runner calls a row its own that the
    source does not define, a flag says so."""
    if reply.get("type") != "coverage":
        result.flags.append(f"profile_failed: {str(reply.get('error'))[:300]}")
        return
    result.flags.append("coverage_self_reported")
    if reply.get("flag"):
        result.flags.append(str(reply["flag"])[:300])
    rows = reply.get("table") if isinstance(reply.get("table"), list) else []
    if len(rows) > MAX_PARSED_ROWS:
        result.flags.append(f"coverage_table_too_long: {len(rows)} rows (at most {MAX_PARSED_ROWS} are read)")
        return
    claimed = [timing for timing in map(_kernel_timing, rows) if timing is not None]
    disowned = sorted({row.name for row in claimed if row.from_candidate and row.name not in own_names})
    if disowned:
        result.flags.append(f"kernel_owner_differs: not defined in the source: {', '.join(disowned)[:200]}")
    table = [
        KernelTiming(row.name, row.device_time_ms, row.calls, row.from_candidate and row.name in own_names)
        for row in claimed
    ]
    result.coverage = coverage_from_table(table)
    runner_coverage = _finite(reply.get("coverage"))
    if result.coverage is not None and (
        runner_coverage is None or abs(runner_coverage - result.coverage) > COVERAGE_CLAIM_TOLERANCE
    ):
        result.flags.append(
            f"coverage_claim_differs: runner {runner_coverage!r}, judge {result.coverage:.4f}"
        )
    result.kernel_table = table[:MAX_TABLE_ROWS]


MAX_TABLE_ROWS = 50  # kept in the result
# read to compute coverage (a forward of a large model launches a few hundred kernels)
MAX_PARSED_ROWS = 10_000
COVERAGE_CLAIM_TOLERANCE = 1e-6  # the runner sums the same floats in the same order
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
