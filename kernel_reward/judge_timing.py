"""Timing the runner cannot fake: the judge's own clock over batches of calls whose outputs it verifies.

One timed batch of either side, on the judge's host clock (``time.perf_counter``):

    [outside the clock: draw K fresh input sets under hidden seeds into private staging; poison the output slots]
    t0 -> copy the K input sets into the side's input slots -> zero the L2 flush buffer -> synchronise
       -> run K calls (candidate: one "run" message to the runner and its reply; reference: the same harness
          function ``runner.execute_call`` in this process) -> copy the K outputs into private capture buffers
       -> synchronise -> t1
    [outside the clock: compare all K captured outputs with the reference's for the same inputs]

* The candidate's inputs enter the shared arena only after t0, so nothing can start on them unclocked.
* The clock stops after the judge has copied the outputs out of the arena. Work the runner leaves behind (a side
  stream, a skipped synchronise) either finishes before that copy, and is inside the clock, or does not, and the
  copy holds a wrong answer. A patched timer in the runner times nothing the judge uses.
* Every timed call's output is verified; the runner cannot tell which calls matter.
* Both sides follow one pattern (``BatchClock``), so their fixed cost per batch (input copies, flush, the runner's
  round trip and GPU context switch, capture, synchronisation) is the same; it is calibrated with empty batches
  BEFORE the candidate's code is loaded, while the runner is still trusted, and subtracted: per-call time =
  (batch time - empty batch time) / K.
* The reference is also timed before the candidate is loaded. A candidate that keeps the GPU busy while the judge
  times the reference would make the reference look slow; the reference time used is the lower of the two
  medians (``reference_phase`` says which), so that can only make the candidate look slower.
* Reference and candidate batches alternate (which goes first alternates too); median speedup with a bootstrap
  95 % interval.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from kernel_reward import exchange
from kernel_reward.remote import RemoteCandidate, poison
from kernel_reward.result import TimingStats
from kernel_reward.runner import execute_call
from kernel_reward.runner_process import RunnerFault
from kernel_reward.tensors import nan_to_sentinel, synchronize
from kernel_reward.timing import (
    TimingValidationError,
    bootstrap_ratio_ci_unpaired,
    bootstrap_speedup_ci,
    summarize,
)

SLOWDOWN_FLAG_RATIO = 1.05  # reference slower while the candidate was loaded than before: flagged beyond this


@dataclass
class BatchTiming:
    """Per-call times (ms) of both sides, and how they were obtained."""

    reference_ms: list[float]
    candidate_ms: list[float]
    calls_per_batch: int
    overhead_ms: float  # empty-batch time subtracted from each batch of either side
    reference_phase: str  # "interleaved" or "before_candidate": which reference samples were used
    reference_before_ms: float  # median per-call time of the reference before the candidate was loaded
    flags: list[str] = field(default_factory=list)
    method: str = "judge_clock_batches"
    reference: TimingStats = field(init=False)
    candidate: TimingStats = field(init=False)
    speedup: float = field(init=False)
    speedup_ci: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.reference = summarize(self.reference_ms)
        self.candidate = summarize(self.candidate_ms)
        self.speedup = float(np.median(self.reference_ms) / max(np.median(self.candidate_ms), 1e-9))
        paired = self.reference_phase == "interleaved" and len(self.reference_ms) == len(self.candidate_ms)
        ci = bootstrap_speedup_ci if paired else bootstrap_ratio_ci_unpaired
        self.speedup_ci = ci(self.reference_ms, self.candidate_ms)


def per_call_ms(batch_ms: float, empty_ms: float, calls: int) -> float:
    """Pure: one call's share of a batch once the side's fixed cost is taken out (never below a nanosecond)."""
    return max(batch_ms - empty_ms, 1e-6) / max(calls, 1)


def pick_reference(before: list[float], during: list[float]) -> tuple[list[float], str, bool]:
    """Pure: the reference samples with the lower median (a candidate cannot gain by slowing the reference down),
    their phase, and whether the reference ran notably slower while the candidate was loaded."""
    slower = float(np.median(during)) > SLOWDOWN_FLAG_RATIO * float(np.median(before))
    if float(np.median(before)) < float(np.median(during)):
        return before, "before_candidate", slower
    return during, "interleaved", slower


def overhead_dominated(overhead_ms: float, per_call: float, calls: int) -> bool:
    """Pure: is a batch's fixed cost larger than the work it times? Then the per-call times are mostly the noise of
    that cost (H200: self-speedup errors of 10-60 %), and the result says so."""
    return overhead_ms > per_call * calls


def calls_per_batch(reference_call_ms: float, target_batch_ms: float, max_slots: int) -> int:
    """Pure: calls per batch so a batch lasts about ``target_batch_ms``, within the slots the arena holds."""
    return int(min(max(1, math.ceil(target_batch_ms / max(reference_call_ms, 1e-4))), max_slots))


class BatchClock:
    """Everything both sides of a timed batch need, laid out once per evaluation (``prepare``).

    The two sides follow one pattern, so their fixed costs are the same and one calibration serves both: the
    judge loads the inputs, the runner answers one message (the candidate's calls; for the reference, the same
    message as a dry run that touches its GPU context), the reference's calls run here (reference side only), the
    judge captures the outputs. Either way the GPU switches from the judge's context to the runner's and back once.
    """

    def __init__(self, reference: Callable[..., Any], reference_module: Any, arena: exchange.Arena,
                 spec: Any, device: torch.device, l2_flush_mb: int, draw: Callable[[int], list[Any]]) -> None:
        self.reference = reference
        self.arena = arena
        self.spec = spec
        self.device = device
        self.draw = draw  # seed -> one input set (a fresh hidden seed each time)
        self.seed_counter = 0
        self.flush = torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.float32, device=device) if l2_flush_mb else None
        self.calls = 0

    def prepare(self, calls: int) -> None:
        """Place ``calls`` input and output slots in the arena (candidate side), a private mirror of them
        (reference side), and the capture stacks (one (calls, *shape) tensor per output, per side)."""
        self.calls = calls
        self.arena.layout.reset()
        sample = self.draw(self._next_seed())
        slot_args, slot_outs = [], []
        for _ in range(calls):
            slot_args.append(exchange.encode_args(sample, lambda t: self.arena.reserve(
                tuple(t.shape), t.dtype, exchange.placement_stride(t))))
            slot_outs.append([self.arena.reserve(shape, dtype)
                              for shape, dtype in zip(self.spec.shapes, self.spec.dtypes, strict=True)])
        self.mirror = torch.empty(self.arena.layout.used, dtype=torch.uint8, device=self.device)  # the used slots only
        self.arena_inputs = [exchange.tensor_views(args, self.arena.tensor) for args in slot_args]
        self.mirror_args = [exchange.decode_args(args, self.mirror) for args in slot_args]
        self.mirror_inputs = [[a for a in args if isinstance(a, torch.Tensor)] for args in self.mirror_args]
        self.arena_outputs = [[exchange.view(self.arena.tensor, r) for r in outs] for outs in slot_outs]
        self.mirror_outputs = [[exchange.view(self.mirror, r) for r in outs] for outs in slot_outs]
        self.captures = {side: [torch.empty((calls, *shape), dtype=dtype, device=self.device)
                                for shape, dtype in zip(self.spec.shapes, self.spec.dtypes, strict=True)]
                         for side in ("reference", "candidate")}
        calls_json = [{"args": args, "out": [r.to_json() for r in outs], "mode": "no_grad", "monitor": False,
                       "structure": self.spec.structure, "train": True} for args, outs in zip(slot_args, slot_outs, strict=True)]
        self.run_message = {"type": "run", "model": 0, "calls": calls_json, "dry": False}
        self.dry_message = {**self.run_message, "dry": True}

    def _next_seed(self) -> int:
        self.seed_counter += 1
        return self.seed_counter

    def stage(self) -> list[list[torch.Tensor]]:
        """K fresh input sets (private; the tensors only, in argument order)."""
        return [[v for v in self.draw(self._next_seed()) if isinstance(v, torch.Tensor)] for _ in range(self.calls)]

    def _load_inputs(self, staged: list[list[torch.Tensor]], targets: list[list[torch.Tensor]]) -> None:
        with torch.no_grad():
            for values, views in zip(staged, targets, strict=True):
                for view, value in zip(views, values, strict=True):
                    view.copy_(value)
            if self.flush is not None:
                self.flush.zero_()
        synchronize(self.device)

    def _capture(self, outputs: list[list[torch.Tensor]], side: str) -> list[torch.Tensor]:
        stacks = self.captures[side]
        with torch.no_grad():
            for index, sources in enumerate(outputs):
                for stack, source in zip(stacks, sources, strict=True):
                    stack[index].copy_(source)
        synchronize(self.device)
        return stacks

    def _ask(self, client: Any, message: dict[str, Any]) -> list[dict[str, Any]]:
        reply = client.ask(message, ("ran",))
        reports = reply.get("calls")
        if not isinstance(reports, list):
            raise RunnerFault("protocol", "a run reply without its call reports")
        return reports

    def time_reference(self, staged: list[list[torch.Tensor]], client: Any, *,
                       empty: bool = False) -> tuple[float, list[torch.Tensor]]:
        """(ms, captured outputs) of one reference batch: its calls run in this process; the runner answers a
        dry run of the same message meanwhile (the same round trip and context switch as a candidate batch)."""
        for outs in self.mirror_outputs:
            poison(outs)
        synchronize(self.device)
        start = time.perf_counter()
        self._load_inputs(staged, self.mirror_inputs)
        self._ask(client, self.dry_message)
        if not empty:
            with torch.no_grad():
                for args, outs in zip(self.mirror_args, self.mirror_outputs, strict=True):
                    execute_call(self.reference, args, outs, self.spec.structure)
        synchronize(self.device)
        captured = self._capture(self.mirror_outputs, "reference")
        return (time.perf_counter() - start) * 1e3, captured

    def time_candidate(self, staged: list[list[torch.Tensor]], client: Any,
                       model_id: int) -> tuple[float, list[torch.Tensor], list[dict[str, Any]]]:
        """(ms, captured outputs, per-call reports) of one candidate batch: one message to the runner, K calls."""
        for outs in self.arena_outputs:
            poison(outs)
        synchronize(self.device)
        message = self.run_message if model_id == 0 else {**self.run_message, "model": model_id}
        start = time.perf_counter()
        self._load_inputs(staged, self.arena_inputs)
        reports = self._ask(client, message)
        captured = self._capture(self.arena_outputs, "candidate")
        return (time.perf_counter() - start) * 1e3, captured, reports

    def inputs_intact(self, staged: list[list[torch.Tensor]]) -> bool:
        """Whether the arena still holds exactly the inputs the judge wrote (one synchronisation for all)."""
        changed = torch.zeros((), dtype=torch.bool, device=self.device)
        for views, values in zip(self.arena_inputs, staged, strict=True):
            for view, value in zip(views, values, strict=True):
                changed |= torch.ne(nan_to_sentinel(view), nan_to_sentinel(value)).any()
        return not bool(changed)


def calibrate(clock: BatchClock, client: Any, repeats: int = 7) -> float:
    """Median ms of an empty batch (the fixed cost both sides share). Run BEFORE the candidate's code is loaded,
    while the runner is still trusted."""
    return float(np.median([clock.time_reference(clock.stage(), client, empty=True)[0] for _ in range(repeats)]))


def time_reference_alone(clock: BatchClock, client: Any, overhead_ms: float, batches: int) -> list[float]:
    """Per-call ms of ``batches`` reference batches (the before-candidate baseline)."""
    return [per_call_ms(clock.time_reference(clock.stage(), client)[0], overhead_ms, clock.calls) for _ in range(batches)]


def time_interleaved(clock: BatchClock, candidate: RemoteCandidate, client: Any, overhead_ms: float,
                     batches: int, validate: Callable[[list[torch.Tensor], list[torch.Tensor]], str | None],
                     ) -> tuple[list[float], list[float]]:
    """Alternating reference / candidate batches on the same fresh inputs; every candidate output verified."""
    reference_ms, candidate_ms = [], []
    for index in range(batches):
        staged = clock.stage()
        order = ("reference", "candidate") if index % 2 == 0 else ("candidate", "reference")
        for side in order:
            if side == "reference":
                ref_time, ref_outputs = clock.time_reference(staged, client)
                ref_outputs = [t.clone() for t in ref_outputs]
            else:
                cand_time, cand_outputs, reports = clock.time_candidate(staged, client, candidate.model_id)
                cand_outputs = [t.clone() for t in cand_outputs]
        failed = next((r for r in reports if not (isinstance(r, dict) and r.get("ok"))), None)
        if failed is not None or len(reports) != clock.calls:
            kind = "error" if failed is not None else "protocol"  # a failing call, or a reply that skips calls
            raise RunnerFault(kind, f"timed batch {index}: {str((failed or {}).get('error', 'calls missing'))[:1500]}")
        if not clock.inputs_intact(staged):
            raise TimingValidationError(f"timed batch {index} modified its inputs")
        reason = validate(ref_outputs, cand_outputs)
        if reason is not None:
            raise TimingValidationError(f"timed batch {index} ({clock.calls} calls): wrong answer: {reason}")
        reference_ms.append(per_call_ms(ref_time, overhead_ms, clock.calls))
        candidate_ms.append(per_call_ms(cand_time, overhead_ms, clock.calls))
    return reference_ms, candidate_ms
