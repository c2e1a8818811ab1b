"""A fake worker for the retry-alone tests: a candidate containing ``needs_device_alone`` runs out of "device
memory" unless the service runs it alone; every evaluation reports its wall-clock interval in ``feedback``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from kernel_reward.result import EvalResult, Status
from tests.support.service_fake_worker import prepare_worker  # noqa: F401  (the zygote calls it)


def evaluate_request(request, *, work_dir: Path, device: str | None = None, timing_slot) -> EvalResult:
    start = time.time()
    if "needs_device_alone" in request.candidate and not request.alone:
        return EvalResult(
            status=Status.RUNTIME_ERROR,
            error="torch.OutOfMemoryError: CUDA out of memory (fake)",
            flags=["out_of_memory"],
            feedback=json.dumps([start, time.time(), request.alone]),
        )
    time.sleep(0.6)
    return EvalResult(
        status=Status.CORRECT,
        compiled=True,
        correct=True,
        reward=1.0,
        feedback=json.dumps([start, time.time(), request.alone]),
    )
