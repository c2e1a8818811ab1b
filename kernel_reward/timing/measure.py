"""How long one candidate takes, on the judge's clock: what ``verdict.judge`` runs between loading and the verdict.

Before the candidate's code reaches the runner: the batch layout, the calibration of both sides' fixed costs
(``calibration``) and the reference's own baseline (``time_reference_before``). After it: warm-up pairs that do
not count, then interleaved reference / candidate batch pairs sized to the timing budget, every candidate output
verified (``compare_timed`` / ``measure``). The batch clock itself is ``batch_clock``; the statistics are
``batch_stats``.
"""

from __future__ import annotations

import logging
import statistics
import time
from typing import Any, NamedTuple

import torch

from kernel_reward.common.tensors import make_inputs
from kernel_reward.ipc import exchange
from kernel_reward.ipc.runner_channel import RunnerClient
from kernel_reward.judge.compare import PiecewiseComparison
from kernel_reward.judge.remote import RemoteCandidate
from kernel_reward.judge.seeds import SeedStream
from kernel_reward.options import EvalOptions
from kernel_reward.timing import batch_clock, batch_stats, calibration, roofline
from kernel_reward.timing.prior import PriorExchange, TimingPrior, prior_key
from kernel_reward.timing.spans import Spans, unrecorded

log = logging.getLogger(__name__)

MAX_CALLS_PER_BATCH = 64
TARGET_BATCH_MS = (
    4.0  # long enough that the per-batch fixed costs (GPU context switches: ~0.1-0.5 ms) are small
)
MIN_BATCHES, MAX_BATCHES = 10, 200
BEFORE_SHARE = 0.3  # share of the reference's timing budget spent before the candidate is loaded


def _timed_reference(reference_model: Any, options: EvalOptions) -> Any:
    """The reference as timed: eager, or torch.compile'd for the stronger baseline (options.py)."""
    if options.baseline == "eager":
        return reference_model
    import torch._inductor.config as inductor_config

    inductor_config.compile_threads = 1  # no compile-worker pool inside the judge
    return torch.compile(reference_model)


class Baseline(NamedTuple):
    """What the timing of one candidate starts from: the clock laid out, both sides' fixed costs, the reference's
    per-call baseline, that measurement as a reusable ``TimingPrior``, and whether it came from one."""

    clock: batch_clock.BatchClock
    overhead: batch_stats.Overhead
    before: list[float]
    prior: TimingPrior
    reused: bool
    age_s: float | None = None  # of a reused prior, as the service reported it
    uses: int | None = None


def _clock(
    reference: Any, arena: exchange.Arena, device: torch.device, options: EvalOptions, spans: Spans
) -> Any:
    hidden = SeedStream()  # secret whatever seed_base says: the timed inputs are never reproducible

    def draw(index: int) -> list[Any]:
        return make_inputs(reference.module, hidden.seed(index), device)

    return batch_clock.BatchClock(
        _timed_reference(reference.model, options),
        arena,
        reference.spec,
        device,
        options.l2_flush_mb if device.type == "cuda" else 0,  # the host clock has no L2 to flush
        draw,
        reference_keeps_inputs=reference.keeps_inputs,
        spans=spans,
    )


def _warm_reference(clock: batch_clock.BatchClock, options: EvalOptions) -> None:
    for _ in range(max(options.warmup_calls, 1)):
        clock.time_reference()


def time_reference_before(
    reference: Any,
    arena: exchange.Arena,
    device: torch.device,
    options: EvalOptions,
    client: RunnerClient,
    seeds: list[int],
    spans: Spans = unrecorded,
    *,
    bandwidth_gbps: float = 0.0,
) -> Baseline:
    """Everything of the timing that must happen while the runner still holds no candidate code: the layout, the
    calibration of both sides' fixed costs, and the reference's own baseline. ``reference``: verdict.Reference.
    ``spans`` clocks each step (``timing.spans.SLOT_STEPS``); the clock keeps it for the pairs that follow."""
    with spans("slot.layout"):
        clock = _clock(reference, arena, device, options, spans)
        clock.prepare(1)
        clock.stage()
    with spans("slot.reference_warmup"):  # and the one-call estimate that sizes the batch
        _warm_reference(clock, options)
        empty_one = statistics.median(clock.time_reference(empty=True) for _ in range(5))
        one_call = statistics.median(clock.time_reference() for _ in range(5)) - empty_one
    with spans("slot.layout"):
        slots = max(1, min(MAX_CALLS_PER_BATCH, arena.layout.capacity // max(clock.used, 1)))
        clock.prepare(batch_stats.calls_per_batch(one_call, TARGET_BATCH_MS, slots))
        clock.stage()
    with spans("slot.calibration"):
        blocks = [calibration.calibrate(clock, client)]
    first = calibration.overhead_from(blocks)
    reference_batch_ms = one_call * clock.calls + max(first.reference_ms, first.reference_wall_ms)
    batches = _batches(options.timing_budget_ms * BEFORE_SHARE, reference_batch_ms, minimum=5)
    with spans("slot.reference_baseline"):  # also spaces the calibration blocks apart
        before_ms = batch_clock.time_reference_alone(clock, batches)
    with spans("slot.calibration"):
        blocks.append(calibration.calibrate(clock, client))
        if not calibration.blocks_agree(*blocks):
            blocks.append(calibration.calibrate(clock, client))
    copy_ms = clock.output_copy_ms()
    overhead = calibration.overhead_from(blocks).with_output_copies(copy_ms)
    before = [batch_stats.per_call_ms(ms, overhead.reference_ms, clock.calls) for ms in before_ms]
    measured = TimingPrior(
        clock.calls, tuple(blocks), copy_ms, tuple(before), clock.reference_late_gates, bandwidth_gbps
    )
    return Baseline(clock, overhead, before, measured, False)


def baseline_from_prior(
    reference: Any,
    arena: exchange.Arena,
    device: torch.device,
    options: EvalOptions,
    prior: TimingPrior,
    spans: Spans = unrecorded,
) -> Baseline:
    """The task's baseline as an earlier judge measured it (``timing.prior``): its layout, fixed costs and reference
    samples, with this process's reference warmed up. Nothing is timed, so it needs no timing slot."""
    clock = _clock(reference, arena, device, options, spans)
    clock.prepare(prior.calls)
    clock.stage()
    _warm_reference(clock, options)
    clock.reference_late_gates = prior.reference_late_gates
    return Baseline(clock, prior.overhead(), list(prior.before), prior, True)


def baseline_key(request: Any, device: torch.device, options: EvalOptions) -> str:
    """``timing.prior.prior_key`` of an EvalRequest's task on ``device``."""
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"  # cpu: the host clock
    return prior_key(request.reference_code, request.entry_point, name, options)


def reused_baseline(
    reference: Any,
    arena: exchange.Arena,
    device: torch.device,
    options: EvalOptions,
    priors: PriorExchange | None,
    key: str,
    spans: Spans = unrecorded,
) -> Baseline | None:
    """The baseline from the service's prior for ``key``, or None when it has none (or a malformed one)."""
    offered = priors.ask(key) if priors is not None else None
    if offered is None:
        return None
    try:
        prior = TimingPrior.from_dict(offered)
    except ValueError:
        log.warning("the service handed over a malformed timing prior; measuring afresh", exc_info=True)
        return None
    baseline = baseline_from_prior(reference, arena, device, options, prior, spans)
    return baseline._replace(age_s=offered.get("age_s"), uses=offered.get("uses"))


def task_baseline(
    reference: Any,
    arena: exchange.Arena,
    device: torch.device,
    options: EvalOptions,
    client: RunnerClient,
    seeds: list[int],
    spans: Spans,
    priors: PriorExchange | None,
    key: str,
) -> Baseline:
    """Inside the timing slot, before the candidate's code exists: the prior a judge may have offered while this one
    queued for the slot, else the baseline measured here and offered to the next judges of the task.
    ``reference``: verdict.Reference; ``key``: ``timing.prior.prior_key``."""
    reused = reused_baseline(reference, arena, device, options, priors, key, spans)
    if reused is not None:
        return reused
    with spans("slot.bandwidth"):  # a copy with the GPU to itself (none on the host clock)
        bandwidth = roofline.device_bandwidth_gbps(device) if device.type == "cuda" else 0.0
    baseline = time_reference_before(
        reference, arena, device, options, client, seeds, spans, bandwidth_gbps=bandwidth
    )
    if priors is not None:
        priors.offer(key, baseline.prior.to_dict())
    return baseline


def roofline_memory(
    input_bytes: int, output_bytes: int, clock: batch_clock.BatchClock, bandwidth_gbps: float
) -> tuple[int, float] | None:
    """What ``roofline.review`` reads: the bytes one call must move and the device's bandwidth (GB/s); None on the
    host clock, which has no bandwidth measured and no roofline (on a GPU a bandwidth <= 0 still fails loudly in
    ``roofline.review``)."""
    if clock.device.type != "cuda":
        return None
    l2_bytes = torch.cuda.get_device_properties(clock.device).L2_cache_size
    return roofline.bytes_per_call(input_bytes, output_bytes, l2_bytes, clock.calls), bandwidth_gbps


def _batch_ms(call_ms: float, calls: int, overhead: batch_stats.Overhead, pair_wall_ms: float = 0.0) -> float:
    """Time of one batch pair (both sides), for sizing the number of batches to the budget: the GPU's estimate,
    or the measured wall-clock time of a whole pair (staging, hand-over and verification included) when longer,
    so that the budget is the wall-clock budget ``EvalOptions.timing_budget_ms`` says it is."""
    return max(2 * call_ms * calls + overhead.reference_ms + overhead.candidate_ms, pair_wall_ms, 1e-3)


def _batches(budget_ms: float, batch_ms: float, *, minimum: int = MIN_BATCHES) -> int:
    return int(min(max(minimum, budget_ms / max(batch_ms, 1e-3)), MAX_BATCHES))


def compare_timed(
    clock: batch_clock.BatchClock,
    candidate: RemoteCandidate,
    client: RunnerClient,
    overhead: batch_stats.Overhead,
    before: list[float],
    options: EvalOptions,
) -> batch_stats.BatchTiming:
    """Warm the candidate (first-call compiles, autotuning) on verified batches that do not count, then measure;
    the second warm-up pair's wall-clock time sizes the measurement."""
    with clock.spans("slot.warmup_pairs"):
        batch_clock.time_interleaved(clock, candidate, client, 1, _validator(options))
        start = time.perf_counter()
        batch_clock.time_interleaved(clock, candidate, client, 1, _validator(options))
        pair_wall_ms = (time.perf_counter() - start) * 1e3
    return measure(clock, candidate, client, overhead, before, options, pair_wall_ms)


TIMED_OUTLIER_SHARE = (
    1e-5  # see compare_outputs: timed batches verify far more values than the correctness trials
)


def _validator(options: EvalOptions) -> Any:
    def compare(outputs: list[tuple[int, torch.dtype]]) -> PiecewiseComparison:
        return PiecewiseComparison(outputs, options.tolerance, TIMED_OUTLIER_SHARE, measure_error=False)

    return compare


def _ablated_validator(options: EvalOptions) -> Any:
    """One call of the ablated batch against the reference, at the correctness checks' tolerance (the decoy rule's,
    ``correctness.check_ablated``: no outliers let through)."""

    def compare(outputs: list[tuple[int, torch.dtype]]) -> PiecewiseComparison:
        return PiecewiseComparison(outputs, options.tolerance, 0.0, measure_error=False)

    return compare


def measure(
    clock: batch_clock.BatchClock,
    candidate: RemoteCandidate,
    client: RunnerClient,
    overhead: batch_stats.Overhead,
    before: list[float],
    options: EvalOptions,
    pair_wall_ms: float = 0.0,
    *,
    step: str = "slot.timed_pairs",
) -> batch_stats.BatchTiming:
    """Interleaved batch pairs within the timing budget, every candidate output verified (clocked as ``step``), and
    ``options.ablated_timed_pairs`` more at secret places with every call ablated (``options.decoy_check``, where the
    candidate's own kernels are required; ``time_interleaved``)."""
    batches = _batches(
        options.timing_budget_ms, _batch_ms(statistics.median(before), clock.calls, overhead, pair_wall_ms)
    )
    late_before = clock.late_gates()
    with clock.spans(step):
        batches_ms = batch_clock.time_interleaved(
            clock,
            candidate,
            client,
            batches,
            _validator(options),
            # none for plain torch programs timed without own kernels (``own_kernels_required``): nothing to skip
            ablated=_ablated_validator(options)
            if options.decoy_check and candidate.own_kernels_required and options.ablated_timed_pairs
            else None,
            ablated_pairs=options.ablated_timed_pairs,
        )
    late_pairs = clock.late_gates() - late_before

    def per_call(batches: list[float], fixed_ms: float) -> list[float]:
        return [batch_stats.per_call_ms(ms, fixed_ms, clock.calls) for ms in batches]

    during = per_call(batches_ms.reference_ms, overhead.reference_ms)
    candidate_ms = per_call(batches_ms.candidate_ms, overhead.candidate_ms)
    ablated_ms = per_call(batches_ms.ablated_ms, overhead.candidate_ms)
    reference_ms, phase, slower = batch_stats.pick_reference(before, during)
    flags = ["reference_slower_while_candidate_loaded"] if slower else []
    if batch_stats.noise_dominated(overhead.spread_ms, statistics.median(reference_ms), clock.calls):
        flags.append("timing_noise_dominated")
    if batch_stats.handoff_dominated(overhead, statistics.median(reference_ms), clock.calls):
        flags.append("timing_handoff_dominated")
    if batch_stats.host_synced(late_pairs, batches, *clock.reference_late_gates):
        flags.append("timing_host_sync")
    notes = {
        **batch_clock.diagnostics(clock),
        **batch_stats.order_speedups(during, candidate_ms),
        "ablated_candidate_ms": ablated_ms,
        "own_share_judge_clock": batch_stats.own_share(candidate_ms, ablated_ms),
    }
    return batch_stats.BatchTiming(
        reference_ms,
        candidate_ms,
        clock.calls,
        overhead,
        phase,
        statistics.median(before),
        clock.method,
        flags,
        notes,
        (batches_ms.reference_ms, batches_ms.candidate_ms),
    )
