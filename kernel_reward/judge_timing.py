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
* Each side's fixed cost per batch (copies, flush, synchronisation; for the candidate also the message round trip
  and the harness's own loop) is calibrated with empty batches BEFORE the candidate's code is loaded, while the
  runner is still trusted, and subtracted: per-call time = (batch time - empty batch time) / K.
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
    overhead_ms: tuple[float, float]  # (reference, candidate) empty-batch time subtracted from each batch
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


def calls_per_batch(reference_call_ms: float, target_batch_ms: float, max_slots: int) -> int:
    """Pure: calls per batch so a batch lasts about ``target_batch_ms``, within the slots the arena holds."""
    return int(min(max(1, math.ceil(target_batch_ms / max(reference_call_ms, 1e-4))), max_slots))


class BatchClock:
    """Everything both sides of a timed batch need, laid out once per evaluation (``prepare``)."""

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
        """Place ``calls`` input and output slots in the arena (candidate side) and a private mirror of them
        (reference side), and private staging and capture buffers."""
        self.calls = calls
        self.arena.layout.reset()
        sample = self.draw(self._next_seed())
        self.slot_args, self.slot_outs = [], []
        self.mirror_args, self.mirror_outs = [], []
        self.mirror = torch.empty(self.arena.nbytes, dtype=torch.uint8, device=self.device)
        for _ in range(calls):
            args = exchange.encode_args(sample, lambda t: self.arena.layout.place(tuple(t.shape), t.dtype, exchange.placement_stride(t)))
            outs = [self.arena.layout.place(shape, dtype) for shape, dtype in zip(self.spec.shapes, self.spec.dtypes, strict=True)]
            self.slot_args.append(args)
            self.slot_outs.append(outs)
        # Views are re-created per call inside the clock (as the runner does), but the copies' targets are fixed.
        self.arena_inputs = [_tensor_views(args, self.arena.tensor) for args in self.slot_args]
        self.mirror_inputs = [_tensor_views(args, self.mirror) for args in self.slot_args]
        self.arena_outputs = [[exchange.view(self.arena.tensor, r) for r in outs] for outs in self.slot_outs]
        self.mirror_outputs = [[exchange.view(self.mirror, r) for r in outs] for outs in self.slot_outs]
        self.captures = [[torch.empty(s, dtype=d, device=self.device) for s, d in zip(self.spec.shapes, self.spec.dtypes, strict=True)]
                         for _ in range(calls)]

    def _next_seed(self) -> int:
        self.seed_counter += 1
        return self.seed_counter

    def stage(self) -> list[list[Any]]:
        """K fresh input sets (private)."""
        return [self.draw(self._next_seed()) for _ in range(self.calls)]

    def _load_inputs(self, staged: list[list[Any]], targets: list[list[torch.Tensor]]) -> None:
        with torch.no_grad():
            for values, views in zip(staged, targets, strict=True):
                for view, value in zip(views, [v for v in values if isinstance(v, torch.Tensor)], strict=True):
                    view.copy_(value)
            if self.flush is not None:
                self.flush.zero_()
        _sync(self.device)

    def _capture(self, outputs: list[list[torch.Tensor]]) -> None:
        with torch.no_grad():
            for sources, targets in zip(outputs, self.captures, strict=True):
                for source, target in zip(sources, targets, strict=True):
                    target.copy_(source)
        _sync(self.device)

    def time_reference(self, staged: list[list[Any]], *, empty: bool = False) -> tuple[float, list[list[torch.Tensor]]]:
        """(ms, outputs) of one reference batch on ``staged`` in this process."""
        for outs in self.mirror_outputs:
            poison(outs)
        _sync(self.device)
        start = time.perf_counter()
        self._load_inputs(staged, self.mirror_inputs)
        with torch.no_grad():
            for args, outs in zip(self.slot_args, self.slot_outs, strict=True):
                views = exchange.decode_args(args, self.mirror)
                out_views = [exchange.view(self.mirror, r) for r in outs]
                if not empty:
                    execute_call(self.reference, views, out_views, self.spec.structure)
        _sync(self.device)
        self._capture(self.mirror_outputs)
        elapsed = (time.perf_counter() - start) * 1e3
        return elapsed, [[c.clone() for c in row] for row in self.captures]

    def time_candidate(self, candidate: RemoteCandidate | None, client: Any, staged: list[list[Any]], *,
                       dry: bool = False) -> tuple[float, list[list[torch.Tensor]], list[dict[str, Any]]]:
        """(ms, outputs, per-call reports) of one candidate batch: one message to the runner, K calls."""
        for outs in self.arena_outputs:
            poison(outs)
        _sync(self.device)
        calls = [{"args": args, "out": [r.to_json() for r in outs], "mode": "no_grad", "monitor": False,
                  "structure": self.spec.structure, "train": True} for args, outs in zip(self.slot_args, self.slot_outs, strict=True)]
        message = {"type": "run", "model": candidate.model_id if candidate is not None else 0, "calls": calls, "dry": dry}
        start = time.perf_counter()
        self._load_inputs(staged, self.arena_inputs)
        reply = client.ask(message, ("ran",))
        self._capture(self.arena_outputs)
        elapsed = (time.perf_counter() - start) * 1e3
        reports = reply.get("calls")
        if not isinstance(reports, list):
            raise RunnerFault("protocol", "a run reply without its call reports")
        return elapsed, [[c.clone() for c in row] for row in self.captures], reports

    def inputs_intact(self, staged: list[list[Any]]) -> bool:
        from kernel_reward.tensors import same_values

        return all(same_values(views, [v for v in values if isinstance(v, torch.Tensor)])
                   for views, values in zip(self.arena_inputs, staged, strict=True))


def _tensor_views(encoded: list[Any], arena: torch.Tensor) -> list[torch.Tensor]:
    return [a for a in exchange.decode_args(encoded, arena) if isinstance(a, torch.Tensor)]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def calibrate(clock: BatchClock, client: Any, repeats: int = 7) -> tuple[float, float]:
    """Median empty-batch ms of (reference, candidate). Run BEFORE the candidate's code is loaded."""
    ref, cand = [], []
    for _ in range(repeats):
        staged = clock.stage()
        ref.append(clock.time_reference(staged, empty=True)[0])
        cand.append(clock.time_candidate(None, client, staged, dry=True)[0])
    return float(np.median(ref)), float(np.median(cand))


def time_reference_alone(clock: BatchClock, overhead_ms: float, batches: int) -> list[float]:
    """Per-call ms of ``batches`` reference batches (the before-candidate baseline)."""
    return [per_call_ms(clock.time_reference(clock.stage())[0], overhead_ms, clock.calls) for _ in range(batches)]


def time_interleaved(clock: BatchClock, candidate: RemoteCandidate, client: Any, overhead: tuple[float, float],
                     batches: int, validate: Callable[[list[torch.Tensor], list[torch.Tensor]], str | None],
                     ) -> tuple[list[float], list[float]]:
    """Alternating reference / candidate batches on the same fresh inputs; every candidate output verified."""
    reference_ms, candidate_ms = [], []
    for index in range(batches):
        staged = clock.stage()
        order = ("reference", "candidate") if index % 2 == 0 else ("candidate", "reference")
        results: dict[str, Any] = {}
        for side in order:
            if side == "reference":
                results[side] = clock.time_reference(staged)
            else:
                results[side] = clock.time_candidate(candidate, client, staged)
        ref_time, ref_outputs = results["reference"]
        cand_time, cand_outputs, reports = results["candidate"]
        failed = next((r for r in reports if not (isinstance(r, dict) and r.get("ok"))), None)
        if failed is not None or len(reports) != clock.calls:
            kind = "error" if failed is not None else "protocol"  # a failing call, or a reply that skips calls
            raise RunnerFault(kind, f"timed batch {index}: {str((failed or {}).get('error', 'calls missing'))[:1500]}")
        if not clock.inputs_intact(staged):
            raise TimingValidationError(f"timed batch {index} modified its inputs")
        for call, (expected, got) in enumerate(zip(ref_outputs, cand_outputs, strict=True)):
            reason = validate(expected, got)
            if reason is not None:
                raise TimingValidationError(f"timed batch {index}, call {call}: wrong answer: {reason}")
        reference_ms.append(per_call_ms(ref_time, overhead[0], clock.calls))
        candidate_ms.append(per_call_ms(cand_time, overhead[1], clock.calls))
    return reference_ms, candidate_ms
