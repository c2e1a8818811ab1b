"""Coverage (PR) of one candidate, bounded and checked against the floor, from the launch ledger or the runner.

With a launch ledger (``PoolConfig.launch_ledger``: CUPTI's kernel records, read from a pipe, ``ipc.ledger``) the
judge takes the records of the timed calls themselves: coverage is the device time of kernels named like the
candidate's ``@triton.jit`` functions (``screen.static_checks.triton_function_names``, the judge's reading of the
source) over all kernel time, and a timing window with fewer own kernels than timed calls is hacked. Without one
the runner measures the per-kernel device times (``coverage_self_reported``) and the judge still decides which
rows are own (the runner's word AND a name from the source) and computes the share itself. Neither number ever
makes a wrong answer right.

Why one module (about 400 lines): one candidate's coverage has two sources, and the ledger's window falls back to
the runner's table whenever its records cannot decide; the window's checks and the table's parsing share the
table's bounds and the floor.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any

import torch

from kernel_reward.common.tensors import make_inputs, synchronize
from kernel_reward.ipc.ledger import KNOWN_ANSWER_KERNEL, LedgerChunk, LedgerMissing
from kernel_reward.judge.correctness import HackReason
from kernel_reward.judge.remote import (
    RemoteCandidate,
    place_input_sets,
)
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, KernelTiming, Status, coverage_from_table
from kernel_reward.timing.ledger_clock import (
    Anchor,
    ClockReading,
    SpanStamps,
    beyond_the_judges_clock,
    read_clock,
    runner_anchor,
    split_by_spans,
)

LEDGER_TIMEOUT_S = 30.0  # a flush waits for the device to finish what the runner queued
# The judge's stamps of a window's gated batches: every batch's (start, end) on the GPU's clock, and the counted ones'
Spans = tuple[list[tuple[int, int]], list[tuple[int, int]]]


@dataclass(frozen=True)
class LedgerAccount:
    """Pure summary of one ledger window: a row per kernel name (own by the judge's names), and what was lost."""

    table: list[KernelTiming]  # by device time, longest first
    dropped: int  # records CUPTI lost
    malformed: int  # lines, markers or bytes that are not the ledger's own

    @property
    def own_launches(self) -> int:
        return sum(row.calls for row in self.table if row.from_candidate)

    @property
    def own_ms(self) -> float:
        return sum(row.device_time_ms for row in self.table if row.from_candidate)

    @property
    def other_ms(self) -> float:
        return sum(row.device_time_ms for row in self.table if not row.from_candidate)

    @property
    def launches(self) -> int:
        return sum(row.calls for row in self.table)

    @property
    def kernel_ms(self) -> float:
        return self.own_ms + self.other_ms

    @property
    def coverage(self) -> float | None:
        return coverage_from_table(self.table)

    def diagnostics(self, timed_calls: int, clock: ClockReading | None) -> dict[str, Any]:
        return {
            "timed_calls": timed_calls,
            "own_launches": self.own_launches,
            "own_ms": self.own_ms,
            "other_ms": self.other_ms,
            "kernels": len(self.table),
            "dropped": self.dropped,
            "malformed": self.malformed,
            **(
                {"judge_work_ms": clock.work_ms, "gated_batches": clock.batches}
                if clock is not None and clock.unclocked_messages == 0
                else {}
            ),
        }


def account(chunk: LedgerChunk, own_names: frozenset[str]) -> LedgerAccount:
    """Pure: ``chunk``'s kernels as a table of kernel names (device time summed, launches counted), each row own
    when ``own_names`` (the judge's reading of the source) has its name."""
    time_ns: dict[str, int] = {}
    calls: dict[str, int] = {}
    for kernel in chunk.kernels:
        time_ns[kernel.name] = time_ns.get(kernel.name, 0) + kernel.duration_ns
        calls[kernel.name] = calls.get(kernel.name, 0) + 1
    table = [
        KernelTiming(name[:MAX_NAME_CHARS], time_ns[name] / 1e6, calls[name], name in own_names)
        for name in sorted(time_ns, key=lambda name: (-time_ns[name], name))
    ]
    return LedgerAccount(table, chunk.dropped, chunk.malformed)


class CoverageMeasure:
    """The coverage of one candidate: ``before_timing()`` opens the ledger's window on the timed calls (when the
    runner has a live ledger), and calling the measure closes it, or asks the runner's profiling pass instead."""

    def __init__(
        self,
        candidate: RemoteCandidate,
        reference_module: Any,
        device: torch.device,
        options: EvalOptions,
        result: EvalResult,
        phases: Any,
        seeds: list[int],
        own_names: frozenset[str],
    ) -> None:
        self.candidate, self.result, self.own_names = candidate, result, own_names
        self.reference_module, self.device, self.seeds = reference_module, device, seeds
        self.options, self.phases = options, phases
        self._window_calls: int | None = None  # the candidate's counted calls when the window opened
        self._clock: Any = None  # the judge's batch clock, and its reading when the window opened
        self._clock_at_open: ClockReading | None = None
        self._anchor: Anchor | None = None  # the runner's offset and stream (ledger_clock.runner_anchor)
        process = candidate.client.process
        state = getattr(process, "ledger_state", None)  # None: no ledger was asked for
        self._ledger_live = state == "started" and process.ledger is not None
        if state is not None and not self._ledger_live:
            result.flags.append(f"launch_ledger_unavailable: {state[:300]}")

    def before_timing(self, clock: Any = None) -> None:
        """Open the ledger's window; ``clock`` (the judge's batch clock) is read now and when it closes."""
        if not self._ledger_live:
            return
        opening = self._take()
        if opening is None:
            return
        if not any(kernel.name == KNOWN_ANSWER_KERNEL for kernel in opening.kernels):
            self.result.flags.append(
                "launch_ledger_silent: the runner's start-up kernel is not in its records"
            )
            return
        self._window_calls = self.candidate.client.counted_calls
        self._clock, self._clock_at_open = clock, read_clock(clock, self.candidate.client)
        process = self.candidate.client.process
        self._anchor = runner_anchor(
            opening, getattr(process, "clock_stamp", None), getattr(process, "load_clock_stamp", None)
        )
        if self._clock_at_open is not None and self._anchor is None:
            why = getattr(process, "clock_stamp_error", None)
            self.result.flags.append(
                "launch_ledger_unanchored: no record of the runner's reading of the GPU's clock"
                + (f" ({why})" if why else "")
                + "; records not tied to the batches"
            )
        elif self._clock_at_open is not None:
            try:  # the GPU's clock around each gated batch, so each record can be tied to one
                clock.stamps = SpanStamps(self.device)
            except Exception as exc:  # noqa: BLE001 - an unusable stamp kernel leaves the window's sum check
                self.result.flags.append(f"launch_ledger_unstamped: {type(exc).__name__}: {str(exc)[:200]}")

    def in_slot(self) -> bool:
        """Measured inside the timing slot: the ledger's window (always: its own-kernel count is a check, not only
        PR) or the events pass (device intervals, which other processes' kernels would skew)."""
        return self._window_calls is not None or self.options.coverage_in_timing_slot

    def after_slot(self) -> bool:
        """Measured after the slot: the runner's profiler pass (its start-up must not hold the slot)."""
        return (
            self._window_calls is None and self.options.profile and not self.options.coverage_in_timing_slot
        )

    def __call__(self) -> None:
        if self._window_calls is None:
            self.runner_pass()
            return
        calls = self.candidate.client.counted_calls - self._window_calls
        window = self._window(calls)
        if window is None:
            self.runner_pass()
            return
        (ledger, off, aside), spans = window
        now = read_clock(self._clock, self.candidate.client)
        clock = (
            now.since(self._clock_at_open) if now is not None and self._clock_at_open is not None else None
        )
        diagnostics = ledger.diagnostics(calls, clock)
        if spans is not None:
            every, counted = spans
            diagnostics.update(
                batch_spans=len(every),
                off_span_records=off.launches,
                off_span_own_launches=off.own_launches,
                off_span_ms=off.kernel_ms,
                uncounted_batch_spans=len(every) - len(counted),
                uncounted_batch_records=aside.launches,
                uncounted_batch_ms=aside.kernel_ms,
                anchor_drift_ppm=round(self._anchor.drift * 1e6, 3),  # spans are stamped only with an anchor
                anchor_drift_unknown_ppm=round(self._anchor.drift_unknown * 1e6, 3),
            )
        self.result.timing_method.setdefault("diagnostics", {})["launch_ledger"] = diagnostics
        if ledger.dropped or ledger.malformed:
            self.result.flags.append(
                f"launch_ledger_incomplete: {ledger.dropped} records dropped, {ledger.malformed} lines not its own"
            )
        if ledger.dropped:
            self.runner_pass()  # records lost: too few own kernels proves nothing, nor is the share the calls'
            return
        self._check(ledger, off, aside, clock, calls)
        self.result.coverage = ledger.coverage
        self.result.kernel_table = ledger.table[:MAX_TABLE_ROWS]
        self.result.flags.append("coverage_from_launch_ledger")

    def _window(
        self, calls: int
    ) -> tuple[tuple[LedgerAccount, LedgerAccount, LedgerAccount], Spans | None] | None:
        """The timed window's records, closed now: the accounts of those that ran inside the counted batches' spans
        on the runner's stream, of those outside every span, and of those inside an ablated or dry batch's (the
        last two empty without spans); and the spans. None (flagged) when its marker never came."""
        chunk = self._take()
        if chunk is None:
            return None
        spans = self._batch_spans()
        timed, off_span, aside = self._split(chunk, spans)
        if spans is not None and chunk.kernels and not (timed.kernels or aside.kernels):
            # each gated batch runs the runner's own copies at least: none inside means the two clocks disagree
            self.result.flags.append(
                "launch_ledger_unanchored: no record ran inside the judge's batch spans; records not tied to them"
            )
            spans = None
            timed, off_span, aside = self._split(chunk, spans)
        ledger = account(timed, self.own_names)
        if self.candidate.own_kernels_required and ledger.own_launches < calls:
            late = self._take()  # a record CUPTI delivered after the marker comes with the next flush
            if late is not None:
                timed, off_span, aside = self._split(chunk.then(late), spans)
                ledger = account(timed, self.own_names)
        return (ledger, account(off_span, self.own_names), account(aside, self.own_names)), spans

    def _split(self, chunk: LedgerChunk, spans: Spans | None) -> tuple[LedgerChunk, LedgerChunk, LedgerChunk]:
        """``chunk``'s records inside the counted batches' spans on the runner's stream, those outside every span,
        and those inside an ablated or dry batch's span (the harness's stand-ins for skipped launches: neither the
        candidate's calls nor work off the clock). Without spans, all are the first."""
        if spans is None:
            return chunk, LedgerChunk(), LedgerChunk()
        every, counted = spans
        inside, off_span = split_by_spans(chunk, every, self._anchor)
        timed, aside = split_by_spans(inside, counted, self._anchor)
        return timed, off_span, aside

    def _check(
        self,
        ledger: LedgerAccount,
        off: LedgerAccount,
        aside: LedgerAccount,
        clock: ClockReading | None,
        calls: int,
    ) -> None:
        """The window's checks: an own kernel for every timed call among the batches' records, and all the window's
        kernel time within the judge's clock; records left out, or a window the clock cannot check, are flagged."""
        if self.candidate.own_kernels_required and ledger.own_launches < calls:
            raise JudgeStop(
                Status.HACKED,
                f"{calls} timed calls ran {ledger.own_launches} of the candidate's own kernels inside the batches "
                f"the judge timed (the launch ledger's records; {off.own_launches} more ran outside them): some "
                "timed calls did the work without them",
                [HackReason.TIMED_WITHOUT_OWN_KERNEL.value],
            )
        if off.table:
            self.result.flags.append(
                f"launch_ledger_off_span: {off.launches} kernels ({off.own_launches} own, "
                f"{off.kernel_ms:.3f} ms) ran outside the gated batches or beside them on another "
                "stream; not counted"
            )
        if clock is None or clock.unclocked_messages:
            self.result.flags.append(
                "launch_ledger_unclocked: its window was not cross-checked with the judge's clock"
            )
            return
        beyond = beyond_the_judges_clock(ledger.kernel_ms + off.kernel_ms + aside.kernel_ms, clock)
        if beyond is not None:
            raise JudgeStop(Status.HACKED, beyond, [HackReason.KERNELS_OUTSIDE_TIMED_CALLS.value])

    def _batch_spans(self) -> Spans | None:
        """The judge's stamps around each gated batch of the window, and those of the counted batches alone (None
        when they were not taken); stops them."""
        stamps = getattr(self._clock, "stamps", None)
        if stamps is None:
            return None
        self._clock.stamps = None
        every = stamps.spans()
        return every, [span for span, counted in zip(every, stamps.counted, strict=True) if counted]

    def runner_pass(self) -> None:
        """PR from the runner's per-kernel times (the judge cannot see inside its process), owned by the judge's
        reading of the source (``own_names``): flagged as self-reported, and a failure only flags. Not asked where
        the options turn coverage off (``profile``)."""
        if not self.options.profile:
            return
        candidate = self.candidate
        with self.phases("profile"):
            inputs = place_input_sets(
                candidate.arena,
                [
                    lambda seed=seed: make_inputs(self.reference_module, seed, self.device)
                    for seed in self.seeds[-2:]
                ],
            )
            synchronize(self.device)
            reply = candidate.client.ask(
                {
                    "type": "coverage",
                    "model": candidate.model_id,
                    "inputs": inputs,
                    "calls": self.options.profile_calls,
                    "method": self.options.coverage_method,
                },
                ("coverage", "error"),
            )
        coverage_from_reply(reply, self.result, self.own_names)

    def _take(self) -> LedgerChunk | None:
        """The records since the previous take, ended by a marker drawn here; None (flagged) when it never comes."""
        marker = secrets.randbits(63)
        try:
            self.candidate.client.ask({"type": "ledger", "marker": marker}, ("ledger_flushed",))
            return self.candidate.client.process.ledger.take(marker, LEDGER_TIMEOUT_S)
        except LedgerMissing as exc:
            self.result.flags.append(f"launch_ledger_silent: {exc}")
            self._window_calls = None
            return None


def below_coverage_floor(coverage: float | None, floor: float | None) -> str | None:
    """Pure: the reason a correct candidate fails strict mode (coverage under ``floor``), or None."""
    if floor is None or coverage is None or coverage >= floor:
        return None
    return (
        f"coverage {coverage:.3f} is below the strict-mode floor {floor:g}: most of the device time is not the "
        "candidate's own Triton kernels (a kernel wrapped around a torch answer)"
    )


def coverage_from_reply(reply: dict[str, Any], result: EvalResult, own_names: frozenset[str]) -> None:
    """The runner's kernel table as claims: malformed rows dropped, each row's owner decided by ``own_names``
    (and the runner's flag: both must say own), coverage computed here from the rows. The runner's own coverage
    number is only compared: where it differs from the judge's, or where the runner calls a row its own that the
    source does not define, a flag says so."""
    if reply.get("type") != "coverage":
        result.flags.append(f"profile_failed: {str(reply.get('error'))[:300]}")
        return
    result.flags.append("coverage_self_reported")
    if reply.get("flag"):
        result.flags.append(str(reply["flag"])[:300])
    rows = reply.get("table") if isinstance(reply.get("table"), list) else []
    if len(rows) > MAX_PARSED_ROWS:
        result.flags.append(f"coverage_table_too_long: {len(rows)} rows (at most {MAX_PARSED_ROWS} are read)")
        return
    claimed = [timing for timing in map(_kernel_timing, rows) if timing is not None]
    disowned = sorted({row.name for row in claimed if row.from_candidate and row.name not in own_names})
    if disowned:
        result.flags.append(f"kernel_owner_differs: not defined in the source: {', '.join(disowned)[:200]}")
    table = [
        KernelTiming(row.name, row.device_time_ms, row.calls, row.from_candidate and row.name in own_names)
        for row in claimed
    ]
    result.coverage = coverage_from_table(table)
    runner_coverage = _finite(reply.get("coverage"))
    if result.coverage is not None and (
        runner_coverage is None or abs(runner_coverage - result.coverage) > COVERAGE_CLAIM_TOLERANCE
    ):
        result.flags.append(
            f"coverage_claim_differs: runner {runner_coverage!r}, judge {result.coverage:.4f}"
        )
    result.kernel_table = table[:MAX_TABLE_ROWS]


MAX_TABLE_ROWS = 50  # kept in the result
MAX_NAME_CHARS = 200  # of a kernel's name in the table (C++ template kernels' names run to thousands)
# read to compute coverage (a forward of a large model launches a few hundred kernels)
MAX_PARSED_ROWS = 10_000
COVERAGE_CLAIM_TOLERANCE = 1e-6  # the runner sums the same floats in the same order
MAX_CALLS = 10**9  # far beyond any profiled run's kernel launches


def _finite(value: Any) -> float | None:
    """``value`` as a float when it is a real, finite number (not a bool, a string or NaN); else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value) if abs(value) < 1e300 else math.inf
    return number if math.isfinite(number) else None


def _kernel_timing(row: Any) -> KernelTiming | None:
    """One row of the runner's kernel table, or None when any field is missing or impossible."""
    if not isinstance(row, dict):
        return None
    time_ms, calls = _finite(row.get("device_time_ms")), _finite(row.get("calls"))
    if time_ms is None or time_ms < 0 or calls is None or not 0 <= calls <= MAX_CALLS or calls != int(calls):
        return None
    return KernelTiming(
        str(row.get("name"))[:MAX_NAME_CHARS], time_ms, int(calls), bool(row.get("from_candidate"))
    )
