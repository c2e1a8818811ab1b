"""Profiling pass: per-kernel device time and coverage (PR) of the candidate's own Triton kernels (FACTS 3).

coverage = device time of kernels launched by the candidate's Triton functions / total device time of all
device-side activity (kernels, memcpy, memset) over ``profile_calls`` forward calls. Only device events count:
no CPU time and no aten parent rows (the published code divided by CPU + CUDA time of every event, which made
its PR systematically low). A device kernel is the candidate's when its name is the name of a Triton function
the launch monitor saw the candidate launch during the same pass.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kernel_reward.launches import LaunchMonitor
from kernel_reward.result import KernelTiming
from kernel_reward.tensors import clone_args


@dataclass
class ProfileResult:
    coverage: float | None
    table: list[KernelTiming]
    total_device_ms: float
    candidate_kernel_names: list[str]


def coverage_from_table(table: list[KernelTiming]) -> float | None:
    """Pure: candidate device time / all device time; None when nothing ran on the device."""
    total = sum(row.device_time_ms for row in table)
    if total <= 0:
        return None
    return sum(row.device_time_ms for row in table if row.from_candidate) / total


def build_table(device_events: list[tuple[str, float]], candidate_names: set[str]) -> list[KernelTiming]:
    """Pure: aggregate (kernel name, duration ms) pairs into rows sorted by time, largest first."""
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for name, duration_ms in device_events:
        totals[name] += duration_ms
        counts[name] += 1
    rows = [KernelTiming(name, totals[name], counts[name], name in candidate_names) for name in totals]
    return sorted(rows, key=lambda row: row.device_time_ms, reverse=True)


def profile_candidate(
    candidate: Callable[..., Any], module_name: str, input_pool: list[list[Any]], device: torch.device, calls: int
) -> ProfileResult:
    """Profile ``calls`` candidate forwards (after one warm call) and compute coverage from device events."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    monitor = LaunchMonitor(module_name)
    argument_sets = [clone_args(input_pool[i % len(input_pool)]) for i in range(calls + 1)]
    with torch.no_grad():
        candidate(*argument_sets[0])
    torch.cuda.synchronize(device)
    with monitor.active(), torch.no_grad(), profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for args in argument_sets[1:]:
            candidate(*args)
        torch.cuda.synchronize(device)
    names = {launch.name for launch in monitor.candidate_launches}
    device_events = [
        (event.name, event.time_range.elapsed_us() / 1e3)
        for event in prof.events()
        if event.device_type == DeviceType.CUDA
    ]
    table = build_table(device_events, names)
    return ProfileResult(coverage_from_table(table), table, sum(r.device_time_ms for r in table), sorted(names))
