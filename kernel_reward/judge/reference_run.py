"""Run a reference program alone, through the same sandboxed pool as evaluations, and describe its outputs.

A worker module for the execution service (``ServiceConfig(worker_module="kernel_reward.judge.reference_run")``): each
request's ``reference_code`` is loaded in a fresh sandboxed child of the warm zygote (no runner: no candidate
code runs), its model built under a fixed seed, inputs drawn under two other seeds, and forward run three times
(inputs A, inputs A again, inputs B). The result says how far each stage got and, when all ran, summarises every
output tensor (``OutputStats``) in ``EvalResult.reference_run``. What makes a reference a bad task is not decided
here: the dataset builder's reference checks classify these statistics.

Statuses: ``correct`` (the reference ran to the end), ``runtime_error`` (it raised; ``error`` names the stage),
``timeout`` / ``crashed`` (from the service's wall clock and process watch).

    with Evaluator(device="cpu", service=ServiceConfig(worker_module="kernel_reward.judge.reference_run")) as ev:
        results = ev.evaluate_many([(reference, "")])
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kernel_reward import runtime
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status

JUDGES_A_RUNNER = False  # nothing but the (trusted) reference runs: no sandboxed runner process
MODEL_SEED = 42  # the evaluator builds under a hidden seed; a fixed one keeps a check reproducible
INPUT_SEEDS = (1, 2)


@dataclass(frozen=True)
class OutputStats:
    """Summary of one output tensor (all floats computed in float64)."""

    index: int  # position in the flattened output (tuple / list / dict values, depth first)
    shape: tuple[int, ...]
    dtype: str  # e.g. "float32"
    numel: int
    finite: bool  # no NaN / Inf
    max_abs: float
    rms: float
    std: float  # population standard deviation over all elements
    repeat_max_abs_diff: float  # max |y(A) - y(A) again|; inf when the shape changed
    other_input_max_abs_diff: float  # max |y(A) - y(B)|; inf when the shape changed

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OutputStats:
        return cls(**{**data, "shape": tuple(data["shape"])})


def preimport() -> None:
    runtime.preimport()


def prepare_worker(device: str | None = None, *, triton_check: bool = True) -> Any:
    del triton_check  # no Triton runs here
    return runtime.prepare_worker(device, triton_check=False)


def evaluate_request(
    request: EvalRequest,
    *,
    work_dir: Path,
    device: str | None = None,
    timing_slot: Any = None,
    runner: Any = None,
) -> EvalResult:
    """Run ``request.reference_code`` as described above (never raises: a failure is the result)."""
    del timing_slot, runner  # nothing is timed; no runner is forked for this module
    started = time.perf_counter()
    report: dict[str, Any] = {"stage": "import", "finished": False}
    result = EvalResult(device=device or request.device, mode="reference_run")
    try:
        report.update(run_reference(request.reference_code, request.entry_point, Path(work_dir), report))
        report["finished"] = True
        result.status = Status.CORRECT
    except BaseException as exc:  # noqa: BLE001 - SystemExit / KeyboardInterrupt from the program are failures too
        result.status = Status.RUNTIME_ERROR
        result.error = (
            f"{report['stage']} raised {type(exc).__name__}: {exc}"[:2000]
            + "\n"
            + "".join(traceback.format_exception(exc))[-3000:]
        )
    result.reference_run = report
    result.phase_seconds = {"total": time.perf_counter() - started}
    sys.stdout.flush()  # the program's output reaches the pipe before the result does (the service keeps its tail)
    sys.stderr.flush()
    return result


def run_reference(source: str, entry_point: str, work_dir: Path, report: dict[str, Any]) -> dict[str, Any]:
    """Load, build, draw, run and summarise; ``report["stage"]`` says where it is (read when it raises)."""
    import torch

    from kernel_reward.common.loading import load_reference
    from kernel_reward.common.tensors import OutputFormatError, clone_args, flatten_outputs
    from kernel_reward.judge.compare import same_values

    report["stage"] = "import"
    module = load_reference(source, work_dir, entry_point)
    report["stage"] = "build"
    torch.manual_seed(MODEL_SEED)
    model = getattr(module, entry_point)(*module.get_init_inputs())
    report["stage"] = "get_inputs"
    draws = []
    for seed in INPUT_SEEDS:
        torch.manual_seed(seed)
        draws.append(list(module.get_inputs()))
    inputs_a, inputs_b = draws
    report["stage"] = "forward"
    with torch.no_grad():
        raw = model(*clone_args(inputs_a))
        first = _tensors(raw)
        again = _tensors(model(*clone_args(inputs_a)))
        other = _tensors(model(*clone_args(inputs_b)))
    report["stage"] = "statistics"
    try:
        flatten_outputs(raw)
        format_error = None
    except OutputFormatError as exc:  # the reward's own rule for what it can compare
        format_error = str(exc)
    outputs = [
        asdict(_stats(i, y, again[i] if i < len(again) else None, other[i] if i < len(other) else None))
        for i, y in enumerate(first)
    ]
    return {
        "outputs": outputs,
        "inputs_identical": same_values(inputs_a, inputs_b),
        "output_format_error": format_error,
    }


def _tensors(value: Any) -> list[Any]:
    """Tensors in an output, depth first through tuples, lists and dict values."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _max_abs_diff(y: Any, other: Any) -> float:
    if other is None or other.shape != y.shape:
        return math.inf
    if y.numel() == 0:
        return 0.0
    diff = float((y.double() - other.double()).abs().max())
    return math.inf if math.isnan(diff) else diff  # NaN only where the other side is not finite: a difference


def _stats(index: int, y: Any, again: Any, other: Any) -> OutputStats:
    import torch

    y = y.detach()
    y64 = y.double()
    finite = bool(torch.isfinite(y64).all())
    empty = y.numel() == 0
    return OutputStats(
        index=index,
        shape=tuple(y.shape),
        dtype=str(y.dtype).removeprefix("torch."),
        numel=y.numel(),
        finite=finite,
        max_abs=float(y64.abs().max()) if not empty and finite else 0.0,
        rms=float(y64.square().mean().sqrt()) if not empty and finite else 0.0,
        std=float(y64.std(correction=0)) if not empty and finite else 0.0,
        repeat_max_abs_diff=_max_abs_diff(y64, again) if finite else math.nan,
        other_input_max_abs_diff=_max_abs_diff(y64, other) if finite else math.nan,
    )
