"""How the judge compares a candidate's outputs with the reference's: tolerances, outliers, NaN
placement, fingerprints, and comparisons built piecewise so a large output never needs a full-size temporary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

FINGERPRINT_CHUNK = 1 << 24  # words per pass: three int64 temporaries of 128 MiB, whatever the output's size


def fingerprint(outputs: list[torch.Tensor]) -> tuple[Any, ...]:
    """Each output's shape, dtype and three wrapping int64 sums over its bytes as 32-bit words (the words, their
    squares, the products of neighbours): equal for bitwise-equal outputs, different for different ones but with
    negligible chance. Lets a check compare outputs across trials without keeping them (a 6 GiB output each).
    One synchronisation, to read the sums."""
    sums, meta = [], []
    for tensor in outputs:
        raw = (
            tensor.detach().reshape(-1).view(torch.uint8)
            if tensor.numel()
            else torch.empty(0, dtype=torch.uint8)
        )
        whole = raw.numel() // 4 * 4
        words = raw[:whole].view(torch.int32)
        total = torch.zeros(3, dtype=torch.int64, device=raw.device)
        for start in range(0, words.numel(), FINGERPRINT_CHUNK):
            w = words[start : start + FINGERPRINT_CHUNK + 1].to(
                torch.int64
            )  # one word of overlap: neighbours
            body = w[:FINGERPRINT_CHUNK]
            total += torch.stack([body.sum(), (body * body).sum(), (w[1:] * w[:-1]).sum()])
        tail = (
            raw[whole:].to(torch.int64).sum()
            if whole < raw.numel()
            else torch.zeros((), dtype=torch.int64, device=raw.device)
        )
        sums.append(torch.cat([total, tail.reshape(1)]))
        meta.append((tuple(tensor.shape), str(tensor.dtype)))
    values = torch.stack(sums).tolist() if sums else []
    return tuple(zip(meta, map(tuple, values), strict=True))


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


@dataclass
class _QueuedOutput:
    index: int
    numel: int
    tolerance: tuple[float, float] | None  # (atol, rtol); None: an integer/bool output compared bitwise
    figures: (
        torch.Tensor
    )  # on the device, float64: [values outside the tolerance, outside 10x it, max finite error]


@dataclass
class QueuedComparison:
    """A comparison whose device work is queued and whose figures are not read yet: ``resolve_all`` reads any
    number of them with one synchronisation (the timed batches verify every pair this way, and read the verdicts
    once the slot's measurement is over). ``decided`` is a verdict the metadata alone gave (a shape mismatch...)."""

    decided: Comparison | None
    outputs: list[_QueuedOutput]
    outlier_share: float
    measure_error: bool


def queue_comparison(
    candidate: list[torch.Tensor],
    reference: list[torch.Tensor],
    tolerance: Any,
    outlier_share: float = 0.0,
    *,
    measure_error: bool = True,
) -> QueuedComparison:
    """Queue ``compare_outputs``'s device work without waiting for it (see ``compare_outputs`` for the rules)."""
    mismatch = metadata_mismatch(candidate, reference)
    if mismatch is not None:
        return QueuedComparison(Comparison(False, None, mismatch), [], outlier_share, measure_error)
    pieces = PiecewiseComparison(
        [(r.numel(), r.dtype) for r in reference], tolerance, outlier_share, measure_error
    )
    for index, (c, r) in enumerate(zip(candidate, reference, strict=True)):
        c, r = c.detach().reshape(-1), r.detach().reshape(-1)
        for start in range(0, r.numel(), COMPARE_CHUNK):
            pieces.add(index, c[start : start + COMPARE_CHUNK], r[start : start + COMPARE_CHUNK])
    return pieces.queued()


def metadata_mismatch(candidate: list[torch.Tensor], reference: list[torch.Tensor]) -> str | None:
    """Pure: why two output lists cannot match whatever their values (count, shape, dtype, device), or None."""
    if len(candidate) != len(reference):
        return f"returned {len(candidate)} tensor(s), the reference returns {len(reference)}"
    for index, (c, r) in enumerate(zip(candidate, reference, strict=True)):
        if c.shape != r.shape:
            return f"output {index}: shape {tuple(c.shape)}, expected {tuple(r.shape)}"
        if c.dtype != r.dtype:
            return f"output {index}: dtype {c.dtype}, expected {r.dtype}"
        if c.device.type != r.device.type:
            return f"output {index}: on {c.device}, expected {r.device.type}"
    return None


COMPARE_CHUNK = 1 << 24  # values per pass (64 MiB of fp32): isclose's temporaries are several times that


class PiecewiseComparison:
    """The figures of a comparison built a piece at a time: ``add`` queues one piece's device work at once (so the
    caller may reuse the piece's buffer for the next one, as the timed batches' snapshot does), ``queued`` gives the
    ``QueuedComparison``. Per piece the temporaries stay under ~0.4 GiB: whole-tensor isclose on a 6 GiB output
    allocates another 6 GiB at a time (enough to run the correctness phase out of memory on an H200)."""

    def __init__(
        self,
        outputs: list[tuple[int, torch.dtype]],
        tolerance: Any,
        outlier_share: float,
        measure_error: bool,
    ) -> None:
        self.outputs = outputs  # (values in all, dtype) of each output, as the reference returns it
        self.tolerance = tolerance
        self.outlier_share = outlier_share
        self.measure_error = measure_error
        self.figures: list[list[torch.Tensor]] = [[] for _ in outputs]

    def add(self, index: int, candidate: torch.Tensor, reference: torch.Tensor) -> None:
        """Queue the figures of one flat piece of output ``index`` (equal lengths, the reference's dtype)."""
        if candidate.shape != reference.shape or candidate.dim() != 1:
            raise ValueError(
                f"output {index}: pieces of {tuple(candidate.shape)} and {tuple(reference.shape)} values"
            )
        if not (reference.is_floating_point() or reference.is_complex()):
            differing = (candidate != reference).sum().to(torch.float64)
            zero = torch.zeros((), dtype=torch.float64, device=reference.device)
            self.figures[index].append(torch.stack([differing, differing, zero]))
            return
        atol, rtol = self.tolerance(str(reference.dtype))
        self.figures[index].append(
            _float_figures(candidate, reference, atol, rtol, self.outlier_share > 0, self.measure_error)
        )

    def queued(self) -> QueuedComparison:
        outputs = []
        for index, ((numel, dtype), pieces) in enumerate(zip(self.outputs, self.figures, strict=True)):
            if numel == 0:
                continue
            if not pieces:
                raise ValueError(f"output {index}: none of its {numel} values was compared")
            stacked = torch.stack(pieces)
            figures = torch.cat([stacked[:, :2].sum(dim=0), stacked[:, 2].max().reshape(1)])
            floating = dtype.is_floating_point or dtype.is_complex
            outputs.append(
                _QueuedOutput(index, numel, self.tolerance(str(dtype)) if floating else None, figures)
            )
        return QueuedComparison(None, outputs, self.outlier_share, self.measure_error)


def _float_figures(
    c: torch.Tensor, r: torch.Tensor, atol: float, rtol: float, wide_check: bool, measure_error: bool
) -> torch.Tensor:
    """Queued [values outside the tolerance, outside 10x it, max finite error] of two flat floating pieces."""
    wide = torch.float64 if r.dtype == torch.float64 else torch.float32
    cw, rw = c.to(wide), r.to(wide)
    outside = (~torch.isclose(cw, rw, atol=atol, rtol=rtol, equal_nan=True)).sum().to(torch.float64)
    # The wider check and the error each cost full passes over the outputs; skipped where they cannot matter.
    far = (
        (~torch.isclose(cw, rw, atol=atol * OUTLIER_SLACK, rtol=rtol * OUTLIER_SLACK, equal_nan=True))
        .sum()
        .to(torch.float64)
        if wide_check
        else outside
    )
    error = (
        _max_finite_error(cw, rw) if measure_error else torch.zeros((), dtype=torch.float64, device=r.device)
    )
    return torch.stack([outside, far, error])


def resolve_all(comparisons: list[QueuedComparison]) -> list[Comparison]:
    """The verdicts of queued comparisons, read with a single synchronisation."""
    figures = [output.figures for comparison in comparisons for output in comparison.outputs]
    values = iter(torch.stack(figures).cpu().reshape(-1).tolist() if figures else [])
    return [
        _verdict(comparison, [(next(values), next(values), next(values)) for _ in comparison.outputs])
        for comparison in comparisons
    ]


def _verdict(comparison: QueuedComparison, figures: list[tuple[float, float, float]]) -> Comparison:
    """Pure: one comparison's verdict from its outputs' (outside, far outside, max error) figures."""
    if comparison.decided is not None:
        return comparison.decided
    worst = max((error for _, _, error in figures), default=0.0)
    for output, (outside, far, error) in zip(comparison.outputs, figures, strict=True):
        if outside == 0:
            continue
        if output.tolerance is None:
            return Comparison(False, None, f"output {output.index}: integer/bool values differ")
        if outside <= comparison.outlier_share * output.numel and far == 0:
            continue
        atol, rtol = output.tolerance
        measured = f" (max abs error {error:.3g})" if comparison.measure_error else ""
        if comparison.measure_error and error == 0:  # isclose fails a finite pair only when |c - r| > 0
            measured = " (each differing value is NaN or infinite on one side only)"
        return Comparison(
            False,
            worst if comparison.measure_error else None,
            f"output {output.index}: {int(outside)} of {output.numel} values outside atol={atol:g} "
            f"rtol={rtol:g}{measured}",
        )
    return Comparison(True, worst if comparison.measure_error else None, None)


def _max_finite_error(c: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Largest |c - r| where both are finite (0 when none is), on the device as float64. masked_fill, not boolean
    indexing: the latter materialises int64 indices (1 GiB for a 64M-value output: it ran a pool worker out of its
    GPU memory cap)."""
    finite = torch.isfinite(r) & torch.isfinite(c)
    return (c - r).abs_().masked_fill_(~finite, 0.0).max().to(torch.float64)


def compare_outputs(
    candidate: list[torch.Tensor],
    reference: list[torch.Tensor],
    tolerance: Any,
    outlier_share: float = 0.0,
    *,
    measure_error: bool = True,
) -> Comparison:
    """Exact count/shape/dtype match, then |c - r| <= atol + rtol * |r| elementwise (NaN must match NaN).

    ``tolerance`` maps a dtype name to (atol, rtol), e.g. ``EvalOptions.tolerance``. ``outlier_share``: up to this
    share of an output's values may miss the tolerance if they are within ``OUTLIER_SLACK`` times it. The timed
    batches use it: they verify hundreds of outputs, and an honest fp32 kernel whose summation order differs from
    torch's misses 1e-4 on about one value in 10^8-10^9 (H200, a 1024-deep matmul); a cached, stale, unfinished or
    lower-precision answer misses on most values. ``measure_error=False``: no max-error pass (the timed batches'
    check, which runs while the GPU's timing slot is held): ``max_abs_error`` is None and a reason gives none.
    """
    return resolve_all(
        [queue_comparison(candidate, reference, tolerance, outlier_share, measure_error=measure_error)]
    )[0]
