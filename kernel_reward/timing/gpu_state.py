"""The GPU's state around a timing (NVML through ``torch.cuda``): SM clock, temperature, power draw.

Recorded in every GPU result (``EvalResult.gpu_state``) at the start and the end of the candidate's timed phase,
so a GPU that drifts (a thermally throttled clock, a power cap) is visible beside the speedup it produced. A
diagnostic, never used for a verdict; fields are None where NVML cannot answer (no pynvml, a restricted driver),
with the reason in ``error``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class GpuSample:
    sm_clock_mhz: int | None
    temperature_c: int | None
    power_w: float | None
    error: str | None = None


def sample(device: torch.device) -> GpuSample:
    """One reading of ``device`` (a CUDA device). Never raises: what NVML cannot give is None, with why. The first
    call in a process initialises NVML (tens of ms): make it outside the timing slot."""
    readers = {
        "sm_clock_mhz": lambda: torch.cuda.clock_rate(device),
        "temperature_c": lambda: torch.cuda.temperature(device),
        "power_w": lambda: torch.cuda.power_draw(device) / 1000.0,
    }  # NVML reports milliwatts
    values: dict[str, Any] = {}
    errors = []
    for name, read in readers.items():
        try:
            values[name] = read()
        except Exception as exc:  # noqa: BLE001 - a diagnostic: NVML missing or refused
            values[name] = None
            errors.append(f"{name}: {type(exc).__name__}: {exc}"[:200])
    return GpuSample(**values, error="; ".join(errors) or None)


def around(before: GpuSample, after: GpuSample) -> dict[str, Any]:
    """Pure: the ``EvalResult.gpu_state`` record of a timed phase (its first and last reading)."""
    return {"start": asdict(before), "end": asdict(after)}
