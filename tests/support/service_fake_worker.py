"""A stand-in for ``kernel_reward.judge.pipeline`` that knows nothing about kernels, for the execution-service tests.

It imports the candidate from a real file in its work dir and calls its ``main()`` (if any), so every hostile
behaviour (fork bombs, exits, floods, sockets...) can be written as plain Python. Verdicts: SyntaxError ->
compile_error, exception -> runtime_error, otherwise correct with ``feedback`` set to repr(main()).
"""

from __future__ import annotations

import importlib.util
import os
import traceback
from pathlib import Path

from kernel_reward.result import EvalResult, Status

PREPARED = {}


def prepare_worker(device: str) -> None:
    if os.environ.get("FAKE_WORKER_FAIL_WARMUP"):
        os._exit(9)
    import torch  # noqa: F401  (already imported by the zygote; the real worker also creates its context here)

    PREPARED["device"] = device


def evaluate_request(request, *, work_dir: Path, device: str | None = None, timing_slot) -> EvalResult:
    path = Path(work_dir) / "candidate.py"
    path.write_text(request.candidate)
    try:
        spec = importlib.util.spec_from_file_location("candidate", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        return EvalResult(status=Status.COMPILE_ERROR, error=f"SyntaxError: {exc}")
    except Exception as exc:  # noqa: BLE001
        return EvalResult(status=Status.RUNTIME_ERROR, error=f"{type(exc).__name__}: {exc}")
    try:
        with timing_slot():
            value = module.main() if hasattr(module, "main") else None
    except Exception as exc:  # noqa: BLE001
        return EvalResult(
            status=Status.RUNTIME_ERROR,
            compiled=True,
            error=f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}",
        )
    return EvalResult(
        status=Status.CORRECT,
        compiled=True,
        correct=True,
        reward=1.0,
        feedback=repr(value),
        device=PREPARED.get("device"),
    )
