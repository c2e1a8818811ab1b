"""Coverage (PR) of one candidate: asked of the runner after timing, bounded and checked against the floor.

The runner measures it (``coverage_self_reported`` in every result): the judge clips what it reports to [0, 1] and
never lets it make a wrong answer right.
"""

from __future__ import annotations

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
    coverage = reply.get("coverage")
    if isinstance(coverage, int | float) and not isinstance(coverage, bool) and coverage == coverage:
        result.coverage = min(max(float(coverage), 0.0), 1.0)
    rows = reply.get("table") if isinstance(reply.get("table"), list) else []
    table = []
    for row in rows[:50]:
        try:
            table.append(
                KernelTiming(
                    str(row["name"])[:200],
                    float(row["device_time_ms"]),
                    int(row["calls"]),
                    bool(row["from_candidate"]),
                )
            )
        except (KeyError, TypeError, ValueError):
            continue
    result.kernel_table = table
