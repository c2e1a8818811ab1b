"""Small tensor helpers shared by correctness, timing and profiling: inputs, clones, output checks, comparison."""

from __future__ import annotations

import copy
import types
from dataclasses import dataclass
from typing import Any

import torch


class OutputFormatError(Exception):
    """The forward output is not a tensor / tuple of tensors the harness can compare."""


def make_inputs(reference_module: types.ModuleType, seed: int, device: torch.device) -> list[Any]:
    """``get_inputs()`` drawn under ``seed`` and placed on ``device``.

    Factory calls without an explicit device draw directly on ``device`` (``torch.device`` as a context): at
    full task sizes, drawing GiB-sized inputs on the host and copying them over dominated the correctness phase
    on the GPU machine. A ``get_inputs`` that cannot run that way (it calls ``.numpy()``, say) is drawn on the
    host, as the task wrote it, and moved. Either way both models get the same tensors.
    """
    seed_generators(seed)
    try:
        with torch.device(device):
            raw = list(reference_module.get_inputs())
    except Exception:
        if torch.device(device).type == "cpu":
            raise
        seed_generators(seed)
        raw = list(reference_module.get_inputs())
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]


def seed_generators(seed: int) -> None:
    """What ``torch.manual_seed`` does for the host and CUDA generators, without the rest: on a machine with no
    XPU or MTIA it queues a lazy seeding call for each, with a formatted stack trace, every time (0.15 ms a draw,
    about 1.2 ms of each timed batch's staging on the H200, and a queue that only grows)."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


def clone_args(args: list[Any]) -> list[Any]:
    """Fresh storage for every tensor argument, so no call sees (or keeps a pointer to) another call's buffers."""
    return [x.detach().clone() if isinstance(x, torch.Tensor) else copy.deepcopy(x) for x in args]


def flatten_outputs(output: Any) -> list[torch.Tensor]:
    """A forward's output as a list of tensors; raise OutputFormatError for anything else."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, tuple | list) and output and all(isinstance(o, torch.Tensor) for o in output):
        return list(output)
    raise OutputFormatError(f"forward returned {type(output).__name__}, expected a tensor or a tuple of tensors")


def non_plain_tensors(outputs: list[torch.Tensor]) -> list[str]:
    """Type names of outputs that are tensor subclasses (lazy tensors, wrappers) rather than torch.Tensor."""
    return [type(o).__name__ for o in outputs if type(o) is not torch.Tensor and type(o) is not torch.nn.Parameter]


def storage_ptrs(tensors: list[Any]) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors if isinstance(t, torch.Tensor) and t.numel() > 0}


def aliases(outputs: list[torch.Tensor], args: list[Any]) -> bool:
    """True when an output shares storage with an input argument (returning an input or a view of one)."""
    return bool(storage_ptrs(outputs) & storage_ptrs(args))


def same_values(a: list[Any], b: list[Any]) -> bool:
    """Bitwise-equal (NaN == NaN) tensors and equal non-tensors, position by position."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            # torch.equal first (no full-size temporaries: large inputs are compared after every call); only a
            # mismatch pays the NaN-aware comparison (NaN == NaN here).
            if not torch.equal(x, y) and not torch.equal(nan_to_sentinel(x), nan_to_sentinel(y)):
                return False
        elif x != y:
            return False
    return True


def nan_to_sentinel(x: torch.Tensor) -> torch.Tensor:
    """The tensor with NaN replaced by a fixed value, so bitwise comparisons treat NaN == NaN."""
    if x.is_floating_point() or x.is_complex():
        return torch.nan_to_num(x.detach(), nan=1.2345e-7)
    return x.detach()


@dataclass
class Comparison:
    ok: bool
    max_abs_error: float | None
    reason: str | None  # why not ok (shape / dtype / device / values / count)


OUTLIER_SLACK = 10.0  # an outlier ``compare_outputs`` lets through is still within 10x the tolerance


def compare_outputs(
    candidate: list[torch.Tensor], reference: list[torch.Tensor], tolerance: Any, outlier_share: float = 0.0,
    *, measure_error: bool = True,
) -> Comparison:
    """Exact count/shape/dtype match, then |c - r| <= atol + rtol * |r| elementwise (NaN must match NaN).

    ``tolerance`` maps a dtype name to (atol, rtol), e.g. ``EvalOptions.tolerance``. ``outlier_share``: up to this
    share of an output's values may miss the tolerance if they are within ``OUTLIER_SLACK`` times it. The timed
    batches use it: they verify hundreds of outputs, and an honest fp32 kernel whose summation order differs from
    torch's misses 1e-4 on about one value in 10^8-10^9 (H200, a 1024-deep matmul); a cached, stale, unfinished or
    lower-precision answer misses on most values. ``measure_error=False``: skip the max-error pass on outputs that
    pass (the timed batches' check, which runs while the GPU's timing slot is held); ``max_abs_error`` is then None.
    """
    if len(candidate) != len(reference):
        return Comparison(False, None, f"returned {len(candidate)} tensor(s), the reference returns {len(reference)}")
    worst = 0.0
    for index, (c, r) in enumerate(zip(candidate, reference, strict=True)):
        if c.shape != r.shape:
            return Comparison(False, None, f"output {index}: shape {tuple(c.shape)}, expected {tuple(r.shape)}")
        if c.dtype != r.dtype:
            return Comparison(False, None, f"output {index}: dtype {c.dtype}, expected {r.dtype}")
        if c.device.type != r.device.type:
            return Comparison(False, None, f"output {index}: on {c.device}, expected {r.device.type}")
        if c.numel() == 0:
            continue
        if not (r.is_floating_point() or r.is_complex()):
            if not torch.equal(c, r):
                return Comparison(False, None, f"output {index}: integer/bool values differ")
            continue
        atol, rtol = tolerance(str(r.dtype))
        wide = torch.float64 if r.dtype == torch.float64 else torch.float32
        cw, rw = c.detach().to(wide), r.detach().to(wide)
        close = torch.isclose(cw, rw, atol=atol, rtol=rtol, equal_nan=True)
        passed = bool(close.all())
        if passed and not measure_error:
            continue
        err = _max_finite_error(cw, rw)
        worst = max(worst, err)
        if passed:
            continue
        bad = int((~close).sum())
        if bad <= outlier_share * c.numel() and bool(torch.isclose(
                cw, rw, atol=atol * OUTLIER_SLACK, rtol=rtol * OUTLIER_SLACK, equal_nan=True).all()):
            continue
        return Comparison(False, worst, f"output {index}: {bad} of {c.numel()} values outside atol={atol:g} rtol={rtol:g} (max abs error {err:.3g})")
    return Comparison(True, worst if measure_error else None, None)


def _max_finite_error(c: torch.Tensor, r: torch.Tensor) -> float:
    """Largest |c - r| where both are finite (0 when none is). masked_fill, not boolean indexing: the latter
    materialises int64 indices (1 GiB for a 64M-value output: it ran a pool worker out of its GPU memory cap)."""
    finite = torch.isfinite(r) & torch.isfinite(c)
    return float((c - r).abs_().masked_fill_(~finite, 0.0).max())


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
