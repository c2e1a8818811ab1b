"""The judge's use of the launch ledger (``judge.coverage``): coverage from the records of the timed calls, owned
by the judge's reading of the source, a window with fewer own kernels than timed calls hacked, and every way the
ledger can be missing or silent flagged with the runner's profiling pass taking over. The runner is a fake that
writes what a ledger would; the real CUPTI side is the gpu test of ``benchmarks/launch_ledger_probe.py``."""

from __future__ import annotations

import dataclasses
import os

import pytest

from kernel_reward.ipc.ledger import KNOWN_ANSWER_KERNEL, KernelRecord, LedgerChunk, LedgerReader
from kernel_reward.judge import coverage
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.result import EvalResult, KernelTiming, Status
from kernel_reward.timing import ledger_clock

OWN = frozenset({"add_relu_kernel"})


def test_the_account_splits_kernel_time_by_the_judges_names():
    chunk = LedgerChunk(
        kernels=[
            KernelRecord("add_relu_kernel", 0, 3_000, 1, 7),
            KernelRecord("add_relu_kernel", 5_000, 8_000, 2, 7),
            KernelRecord("ampere_sgemm_128x64_nn", 10_000, 14_000, 3, 7),
        ],
        dropped=1,
    )
    ledger = coverage.account(chunk, OWN)
    assert ledger.own_launches == 2 and ledger.own_ms == pytest.approx(0.006) and ledger.other_ms == 0.004
    assert ledger.coverage == pytest.approx(0.6) and ledger.dropped == 1
    # one row per kernel name, longest first, own by the judge's names
    assert ledger.table == [
        KernelTiming("add_relu_kernel", 0.006, 2, True),
        KernelTiming("ampere_sgemm_128x64_nn", 0.004, 1, False),
    ]
    assert coverage.account(LedgerChunk(), OWN).coverage is None


class FakeLedgerRunner:
    """A runner's client whose "ledger" flushes write ``script``'s next records, then the judge's marker."""

    def __init__(self, script: list[list[str]], state: str | None = "started") -> None:
        read, self.write = os.pipe()
        self.process = type(
            "Process", (), {"ledger": LedgerReader(read), "ledger_state": state, "clock_stamp": CLOCK_READING}
        )()
        self.script = iter(script)
        self.asked: list[str] = []
        self.counted_calls = 0
        self.unclocked_messages = 0

    def ask(self, message, expect):
        self.asked.append(message["type"])
        assert message["type"] == "ledger" and expect == ("ledger_flushed",)
        lines = next(self.script, [])  # past the script: flushes with nothing new
        os.write(self.write, "".join(line + "\n" for line in lines).encode())
        if lines is not SILENT:
            os.write(self.write, f"M\t{message['marker']}\n".encode())
        return {"type": "ledger_flushed"}

    def close(self):
        os.close(self.write)
        self.process.ledger.close()


SILENT: list[str] = []  # a flush whose marker never comes


class FakeCandidate:
    def __init__(self, client: FakeLedgerRunner) -> None:
        self.client = client
        self.own_kernels_required = True


class FakeClock:
    """The judge's batch clock as the ledger's window reads it: gated, with running totals of the candidate's
    batches' work spans."""

    gate = object()

    def __init__(self) -> None:
        self.gated_candidate_ms = 40.0  # batches timed before the window opened
        self.gated_candidate_batches = 10


def timed_window(
    monkeypatch, script, calls, state="started", clock=None, judge_ms=0.0, batches=0, unclocked=0
):
    """One evaluation's coverage with a fake runner whose flushes write ``script``: the window opened, ``calls``
    counted calls (in ``batches`` gated batches that the judge's ``clock`` timed at ``judge_ms`` in all, and
    ``unclocked`` messages no gate held), the window closed. Returns the result and the runner's client; the
    runner's own pass, where the ledger cannot answer, reads 0.5."""
    client = FakeLedgerRunner(script, state)
    result = EvalResult()
    candidate = FakeCandidate(client)
    measure = coverage.CoverageMeasure(candidate, None, None, None, result, None, [], OWN)

    def runner_pass():
        result.coverage = 0.5
        result.flags.append("coverage_self_reported")

    monkeypatch.setattr(measure, "runner_pass", runner_pass)
    try:
        measure.before_timing(clock)
        client.counted_calls += calls
        client.unclocked_messages += unclocked
        if clock is not None:
            clock.gated_candidate_ms += judge_ms
            clock.gated_candidate_batches += batches
        measure()
    finally:
        client.close()
    return result, client


START = f"K\t{KNOWN_ANSWER_KERNEL}\t1\t2\t1\t7"
CLOCK_READING = 1_000  # the runner's reading of the GPU's clock; its record below starts 300 ns later
OFFSET = 300
STAMP = f"K\tglobaltimer_stamp\t{CLOCK_READING + OFFSET}\t{CLOCK_READING + OFFSET + 900}\t2\t7"


def test_coverage_comes_from_the_timed_calls_records(monkeypatch):
    timed = ["K\tadd_relu_kernel\t100\t190\t5\t7", "K\tvoid at::native::copy_kernel\t200\t210\t6\t7"] * 4
    result, _ = timed_window(monkeypatch, [[START, "K\tadd_relu_kernel\t3\t4\t2\t7"], timed], calls=4)
    assert result.coverage == pytest.approx(0.9) and "coverage_from_launch_ledger" in result.flags
    assert "coverage_self_reported" not in result.flags
    diagnostics = result.timing_method["diagnostics"]["launch_ledger"]
    assert diagnostics["timed_calls"] == 4 and diagnostics["own_launches"] == 4
    # the table the feedback shows comes from the same records
    assert [(row.name, row.calls, row.from_candidate) for row in result.kernel_table] == [
        ("add_relu_kernel", 4, True),
        ("void at::native::copy_kernel", 4, False),
    ]


def test_timed_calls_that_ran_fewer_own_kernels_than_calls_are_hacked(monkeypatch):
    timed = ["K\tadd_relu_kernel\t100\t190\t5\t7"] + ["K\tampere_sgemm\t200\t900\t6\t7"] * 8
    with pytest.raises(JudgeStop) as stop:
        timed_window(monkeypatch, [[START], timed], calls=8)
    assert stop.value.status == Status.HACKED and stop.value.hack_reasons == ["timed_without_own_kernel"]


def test_a_kernel_named_like_the_candidates_by_the_runner_only_is_not_own(monkeypatch):
    # the runner's process can name records anything; ownership is the judge's set of names
    timed = ["K\tadd_relu_kernel\t100\t110\t5\t7", "K\tnot_in_the_source\t200\t900\t6\t7"]
    result, _ = timed_window(monkeypatch, [[START], timed], calls=1)
    assert result.coverage == pytest.approx(10 / 710)


@pytest.mark.parametrize(
    ("script", "state", "flag"),
    [
        ([], "starting CUPTI's kernel activity records: CUPTI_ERROR_X", "launch_ledger_unavailable"),
        ([], "not built: no C compiler on PATH (set CC)", "launch_ledger_unavailable"),
        (
            [["K\tsomething_else\t1\t2\t1\t7"]],
            "started",
            "launch_ledger_silent: the runner's start-up kernel",
        ),
        ([[START], SILENT], "started", "launch_ledger_silent: the ledger's marker"),
    ],
    ids=["cupti_failed", "not_built", "start_kernel_missing", "marker_never_came"],
)
def test_a_missing_or_silent_ledger_is_flagged_and_the_runner_pass_decides(monkeypatch, script, state, flag):
    monkeypatch.setattr(coverage, "LEDGER_TIMEOUT_S", 0.3)
    result, _ = timed_window(monkeypatch, script, calls=3, state=state)
    assert any(f.startswith(flag) for f in result.flags), result.flags
    assert result.coverage == 0.5 and "coverage_self_reported" in result.flags
    assert "coverage_from_launch_ledger" not in result.flags


def test_without_a_ledger_nothing_is_asked_of_it(monkeypatch):
    result, client = timed_window(monkeypatch, [], calls=2, state=None)
    assert client.asked == [] and result.coverage == 0.5 and not any("ledger" in f for f in result.flags)


def test_lines_that_are_not_the_ledgers_are_flagged_and_its_own_records_still_decide(monkeypatch):
    result, _ = timed_window(
        monkeypatch, [[START], ["K\tadd_relu_kernel\t100\t190\t5\t7", "garbage"]], calls=1
    )
    assert "launch_ledger_incomplete: 0 records dropped, 1 lines not its own" in result.flags
    assert "coverage_from_launch_ledger" in result.flags and result.coverage == 1.0


def test_records_cupti_dropped_never_make_a_verdict(monkeypatch):
    # lost records cannot prove that a timed call ran no own kernel: the runner's pass decides, flagged
    result, _ = timed_window(monkeypatch, [[START], ["D\t40"]], calls=8)
    assert "launch_ledger_incomplete: 40 records dropped, 0 lines not its own" in result.flags
    assert result.coverage == 0.5 and "coverage_self_reported" in result.flags


def test_own_records_delivered_after_the_marker_are_counted_before_a_verdict(monkeypatch):
    # CUPTI's thread may deliver a buffer after the flush's marker: the judge flushes once more before it decides
    late = ["K\tadd_relu_kernel\t300\t390\t9\t7"] * 2
    result, client = timed_window(
        monkeypatch, [[START], ["K\tadd_relu_kernel\t100\t190\t5\t7"], late], calls=3
    )
    assert client.asked == ["ledger"] * 3
    assert result.timing_method["diagnostics"]["launch_ledger"]["own_launches"] == 3
    assert "coverage_from_launch_ledger" in result.flags


def test_a_shortfall_that_stays_after_the_second_flush_is_hacked(monkeypatch):
    with pytest.raises(JudgeStop) as stop:
        timed_window(monkeypatch, [[START], ["K\tadd_relu_kernel\t100\t190\t5\t7"], []], calls=3)
    assert stop.value.hack_reasons == ["timed_without_own_kernel"]


def test_the_ledgers_window_closes_in_the_slot_even_with_coverage_off():
    # its own-kernel count is a check, not only PR: profile=False turns off the runner's pass, not the ledger
    from kernel_reward.options import EvalOptions

    client = FakeLedgerRunner([[START]])
    candidate = FakeCandidate(client)
    options = EvalOptions(profile=False)
    try:
        measure = coverage.CoverageMeasure(candidate, None, None, options, EvalResult(), None, [], OWN)
        assert not measure.in_slot() and not measure.after_slot()  # no window yet, no pass asked
        measure.before_timing()
        assert measure.in_slot() and not measure.after_slot()
    finally:
        client.close()
    profiled = coverage.CoverageMeasure(
        FakeCandidate(FakeLedgerRunner([], None)), None, None, EvalOptions(coverage_method="profiler"),
        EvalResult(), None, [], OWN,
    )  # fmt: skip
    assert not profiled.in_slot() and profiled.after_slot()
    profiled.candidate.client.close()


def test_the_judges_clock_bounds_the_kernel_time_of_the_gated_batches():
    clock = ledger_clock.ClockReading(work_ms=10.0, batches=4, unclocked_messages=0)
    allowed = 10.0 * (1 + ledger_clock.CLOCK_TOLERANCE) + 4 * ledger_clock.CLOCK_SLACK_PER_BATCH_MS
    assert ledger_clock.beyond_the_judges_clock(9.5, clock) is None
    assert ledger_clock.beyond_the_judges_clock(allowed, clock) is None
    reason = ledger_clock.beyond_the_judges_clock(allowed + 0.001, clock)
    assert reason is not None and "4 batches (10.000 ms)" in reason
    earlier = ledger_clock.ClockReading(3.0, 1, 2)
    assert ledger_clock.ClockReading(10.0, 4, 2).since(earlier) == ledger_clock.ClockReading(7.0, 3, 0)


TIMED = ["K\tadd_relu_kernel\t100\t190\t5\t7", "K\tvoid at::native::copy_kernel\t200\t210\t6\t7"] * 4


def test_kernels_inside_the_judges_clock_give_coverage_and_show_the_clocks_span(monkeypatch):
    # 0.4 us of kernels in 4 batches the judge timed at 0.6 us in all (hand-over included)
    result, _ = timed_window(
        monkeypatch, [[START], TIMED], calls=4, clock=FakeClock(), judge_ms=0.0006, batches=4
    )
    assert result.coverage == pytest.approx(0.9) and "coverage_from_launch_ledger" in result.flags
    diagnostics = result.timing_method["diagnostics"]["launch_ledger"]
    assert diagnostics["judge_work_ms"] == pytest.approx(0.0006) and diagnostics["gated_batches"] == 4
    assert not any(flag.startswith("launch_ledger_unclocked") for flag in result.flags)


def test_own_kernels_that_ran_off_the_clock_are_hacked(monkeypatch):
    # the timed calls' records as above, plus an own kernel spinning 50 us on another stream (a background thread):
    # coverage and the own-launch count alone would take it; the judge's clock timed 0.6 us of batches
    padded = TIMED + [
        f"K\tadd_relu_kernel\t{t}\t{t + 50_000}\t{90 + t}\t13" for t in range(0, 500_000, 50_000)
    ]
    with pytest.raises(JudgeStop) as stop:
        timed_window(monkeypatch, [[START], padded], calls=4, clock=FakeClock(), judge_ms=0.0006, batches=4)
    assert stop.value.status == Status.HACKED
    assert stop.value.hack_reasons == ["kernels_outside_timed_calls"]
    assert "4 batches" in str(stop.value)


@pytest.mark.parametrize(
    ("clock", "unclocked"), [(None, 0), (FakeClock(), 1)], ids=["host_clock", "ungated_message"]
)
def test_a_window_the_judges_clock_does_not_cover_is_flagged_not_judged_by_it(monkeypatch, clock, unclocked):
    # no gated span to compare with (a host clock), or a message no gate held ran in the window: the cross-check
    # would either be impossible or could wrongly catch an honest candidate, so it is skipped and said
    padded = TIMED + ["K\tadd_relu_kernel\t0\t500000\t99\t13"]
    result, _ = timed_window(
        monkeypatch, [[START], padded], calls=4, clock=clock, judge_ms=0.0006, batches=4, unclocked=unclocked
    )
    assert any(flag.startswith("launch_ledger_unclocked") for flag in result.flags)
    assert "judge_work_ms" not in result.timing_method["diagnostics"]["launch_ledger"]


def test_records_are_split_by_the_judges_batch_spans():
    chunk = LedgerChunk(
        kernels=[
            KernelRecord("inside", 1_000, 2_000, 1, 7),
            KernelRecord("edge", 999, 5_001, 2, 7),  # within the slack of [1_000, 5_000]
            KernelRecord("between", 6_000, 7_000, 3, 7),  # between two batches
            KernelRecord("straddles", 4_000, 9_000, 4, 7),  # starts in one batch, ends after it
            KernelRecord("second", 10_500, 11_000, 5, 13),  # inside the second batch, whatever its stream
            KernelRecord("before", 0, 500, 6, 7),
        ],
        dropped=2,
    )
    inside, outside = ledger_clock.split_by_spans(chunk, [(10_000, 12_000), (1_000, 5_000)], slack_ns=2)
    assert [k.name for k in inside.kernels] == ["inside", "edge", "second"] and inside.dropped == 2
    assert [k.name for k in outside.kernels] == ["between", "straddles", "before"] and outside.dropped == 0
    assert ledger_clock.split_by_spans(chunk, [])[0].kernels == []


class FakeStamps:
    """The judge's stamps around the window's batches: ``spans`` as given."""

    spans_given: list[tuple[int, int]] = []
    counted_given: list[bool] | None = None  # None: every batch counted

    def __init__(self, device) -> None:
        self.counted = list(self.counted_given or [True] * len(self.spans_given))

    def spans(self) -> list[tuple[int, int]]:
        return list(self.spans_given)


def stamped_window(monkeypatch, spans, script, calls, judge_ms, counted=None):
    monkeypatch.setattr(FakeStamps, "spans_given", spans)
    monkeypatch.setattr(FakeStamps, "counted_given", counted)
    monkeypatch.setattr(coverage, "SpanStamps", FakeStamps)
    clock = FakeClock()
    clock.stamps = None
    result, client = timed_window(
        monkeypatch, script, calls=calls, clock=clock, judge_ms=judge_ms, batches=len(spans)
    )
    return result, client, clock


def test_own_kernels_counted_only_inside_the_batches_the_judge_timed(monkeypatch):
    # 4 timed calls in 4 batches, each call's own kernel inside its batch: coverage from those records alone
    spans = [(1_000_000 * b, 1_000_000 * b + 200_000) for b in range(1, 5)]
    timed = [
        f"K\tadd_relu_kernel\t{1_000_000 * b + 50_000}\t{1_000_000 * b + 140_000}\t{b}\t7"
        for b in range(1, 5)
    ]
    result, _, clock = stamped_window(monkeypatch, spans, [[START, STAMP], timed], calls=4, judge_ms=0.8)
    assert result.coverage == 1.0 and "coverage_from_launch_ledger" in result.flags
    diagnostics = result.timing_method["diagnostics"]["launch_ledger"]
    assert diagnostics["batch_spans"] == 4 and diagnostics["off_span_records"] == 0
    assert clock.stamps is None  # stopped once the window closed
    assert not any(flag.startswith("launch_ledger_off_span") for flag in result.flags)


def test_an_ablated_batchs_poison_fills_leave_coverage_and_the_count_alone(monkeypatch):
    # 4 batches, the third ablated: its calls' own launches were replaced by the harness's NaN fills (torch kernels
    # on the runner's stream, inside the batch). They are the harness's, not the candidate's other work: coverage
    # stays 1.0 and the count asks an own kernel of the 3 counted calls only; the fills still count for the clock
    spans = [(1_000_000 * b, 1_000_000 * b + 200_000) for b in range(1, 5)]
    own = [
        f"K\tadd_relu_kernel\t{1_000_000 * b + 50_000}\t{1_000_000 * b + 140_000}\t{b}\t7" for b in (1, 2, 4)
    ]
    fills = [
        f"K\tvoid at::native::FillFunctor\t{3_050_000 + i * 20_000}\t{3_060_000 + i * 20_000}\t{9 + i}\t7"
        for i in range(3)
    ]

    def window(judge_ms):  # the third batch ablated
        script = [[START, STAMP], own + fills]
        return stamped_window(monkeypatch, spans, script, 3, judge_ms, counted=[True, True, False, True])

    result, _, _ = window(0.8)
    assert result.coverage == 1.0
    diagnostics = result.timing_method["diagnostics"]["launch_ledger"]
    assert diagnostics["uncounted_batch_spans"] == 1 and diagnostics["uncounted_batch_records"] == 3
    assert diagnostics["uncounted_batch_ms"] == pytest.approx(0.03)
    assert not any(flag.startswith("launch_ledger_off_span") for flag in result.flags)
    # the fills are work the judge timed: with them the window (0.30 ms) no longer fits a 0.28 ms clock
    with pytest.raises(JudgeStop) as stop:
        window(0.28)
    assert stop.value.hack_reasons == ["kernels_outside_timed_calls"]


def test_an_own_kernel_count_padded_between_batches_is_hacked(monkeypatch):
    # the timed calls ran torch only; a background thread's tiny own kernels fell between the batches: enough of
    # them to meet the count, and too short to break the clock's sum, but none inside a batch
    spans = [(1_000_000 * b, 1_000_000 * b + 200_000) for b in range(1, 5)]
    torch_calls = [
        f"K\tvoid at::native::add_kernel\t{1_000_000 * b + 50_000}\t{1_000_000 * b + 60_000}\t{b}\t7"
        for b in range(1, 5)
    ]
    ticks = [
        f"K\tadd_relu_kernel\t{1_000_000 * b + 500_000}\t{1_000_000 * b + 502_000}\t{10 + b}\t13"
        for b in range(1, 5)
    ]
    with pytest.raises(JudgeStop) as stop:
        stamped_window(monkeypatch, spans, [[START, STAMP], torch_calls + ticks], calls=4, judge_ms=0.8)
    assert stop.value.hack_reasons == ["timed_without_own_kernel"]
    assert "4 more ran outside them" in str(stop.value)


def test_kernels_outside_the_spans_are_flagged_and_leave_coverage_alone(monkeypatch):
    # an honest candidate whose side-stream kernel outlived its batch: not counted, said, not a verdict
    spans = [(1_000_000, 1_200_000)]
    records = [
        "K\tadd_relu_kernel\t1050000\t1140000\t1\t7",
        "K\tvoid at::native::copy_kernel\t1150000\t1160000\t2\t7",
    ]
    stray = ["K\tvoid at::native::fill_kernel\t1300000\t1302000\t3\t13"]
    result, _, _ = stamped_window(
        monkeypatch, spans, [[START, STAMP], records + stray], calls=1, judge_ms=0.2
    )
    assert result.coverage == pytest.approx(0.9)
    assert any(flag.startswith("launch_ledger_off_span: 1 kernels (0 own") for flag in result.flags)


def test_a_stamp_kernel_that_cannot_run_is_flagged_and_the_window_still_judged(monkeypatch):
    def broken(device):
        raise RuntimeError("no inline asm here")

    monkeypatch.setattr(coverage, "SpanStamps", broken)
    result, _ = timed_window(
        monkeypatch, [[START, STAMP], TIMED], calls=4, clock=FakeClock(), judge_ms=0.0006, batches=4
    )
    assert any(flag.startswith("launch_ledger_unstamped: RuntimeError") for flag in result.flags)
    assert (
        "coverage_from_launch_ledger" in result.flags
        and "batch_spans" not in result.timing_method["diagnostics"]["launch_ledger"]
    )


def test_stamps_on_another_clock_than_the_records_are_flagged_and_not_used(monkeypatch):
    # no record inside any span (a GPU whose CUPTI timestamps are not the globaltimer's): the window is judged as
    # without stamps, and says so
    result, _, _ = stamped_window(
        monkeypatch, [(10**15, 10**15 + 1)], [[START, STAMP], TIMED], calls=4, judge_ms=0.0006
    )
    assert any(flag.startswith("launch_ledger_unanchored") for flag in result.flags)
    assert (
        result.coverage == pytest.approx(0.9)
        and "batch_spans" not in result.timing_method["diagnostics"]["launch_ledger"]
    )


def test_the_offset_comes_from_the_runners_own_reading_and_places_each_record():
    # CUPTI's clock ran 0.6 ms ahead of the GPU's in the runner (H100: 0.58 and 0.68 ms in two processes)
    offset = 600_000
    opening = LedgerChunk(
        kernels=[
            # the runner's, at start-up, on the stream its calls run on
            KernelRecord("globaltimer_stamp", 5_000 + offset, 6_000 + offset, 2, 7),
            KernelRecord("globaltimer_stamp", 90_000 + offset, 91_000 + offset, 3, 7),  # a candidate's, later
        ]
    )
    anchor = ledger_clock.runner_anchor(opening, 5_000)
    assert (anchor.offset_ns, anchor.stream, anchor.drift) == (offset, 7, 0.0)
    assert anchor.drift_unknown == ledger_clock.MAX_DRIFT  # one reading: the drift is unknown up to its bound
    assert ledger_clock.runner_anchor(opening, None) is None
    assert ledger_clock.runner_anchor(LedgerChunk(), 5_000) is None
    batch = (1_000_000, 1_200_000)
    chunk = LedgerChunk(
        kernels=[
            KernelRecord("in_batch", 1_050_000 + offset, 1_150_000 + offset, 4, 7),
            KernelRecord("between", 1_300_000 + offset, 1_302_000 + offset, 5, 7),
            KernelRecord(
                "beside", 1_060_000 + offset, 1_100_000 + offset, 6, 13
            ),  # in the batch, another stream
        ]
    )
    inside, outside = ledger_clock.split_by_spans(
        chunk, [batch], dataclasses.replace(anchor, drift_unknown=0.0)
    )
    assert [k.name for k in inside.kernels] == ["in_batch"]
    assert [k.name for k in outside.kernels] == ["between", "beside"]
    # without the offset neither record lies in the batch
    assert ledger_clock.split_by_spans(chunk, [batch])[0].kernels == []


def test_a_runner_that_reported_no_reading_is_flagged_and_its_window_judged_without_spans(monkeypatch):
    monkeypatch.setattr(FakeStamps, "spans_given", [(10**15, 10**15 + 1)])
    monkeypatch.setattr(coverage, "SpanStamps", FakeStamps)
    result, _ = timed_window(
        monkeypatch, [[START], TIMED], calls=4, clock=FakeClock(), judge_ms=0.0006, batches=4
    )
    assert any(
        flag.startswith("launch_ledger_unanchored: no record of the runner's") for flag in result.flags
    )
    assert result.coverage == pytest.approx(0.9) and "coverage_from_launch_ledger" in result.flags


def test_own_kernels_beside_the_calls_on_another_stream_add_nothing_to_coverage(monkeypatch):
    # each timed call: a one-element own flag kernel and torch's GEMM on the runner's stream; a thread's own kernel
    # spins on a stream of its own through each batch (concurrent: it costs the calls nothing), all of it within the
    # judge's clock (a small task's work spans hold far more than its kernels: only where each record ran tells)
    spans = [(1_000_000 * b, 1_000_000 * b + 900_000) for b in range(1, 5)]
    records = []
    for b in range(1, 5):
        base = 1_000_000 * b + OFFSET
        records += [
            f"K\tadd_relu_kernel\t{base + 10_000}\t{base + 12_000}\t{10 * b}\t7",
            f"K\tampere_sgemm\t{base + 20_000}\t{base + 820_000}\t{10 * b + 1}\t7",
            f"K\tadd_relu_kernel\t{base + 15_000}\t{base + 880_000}\t{10 * b + 2}\t13",
        ]
    result, _, _ = stamped_window(monkeypatch, spans, [[START, STAMP], records], calls=4, judge_ms=7.0)
    assert result.coverage == pytest.approx(2 / 802)
    assert any(flag.startswith("launch_ledger_off_span: 4 kernels (4 own") for flag in result.flags)


DRIFT = 20.4e-6  # CUPTI's clock against the GPU's in two H100 processes: 307 us over 15 s


def _drifting(gpu_ns: int, offset0: int, reading0: int) -> int:
    """A record's CUPTI timestamp for GPU time ``gpu_ns``, the offset ``offset0`` at ``reading0`` drifting."""
    return gpu_ns + offset0 + round(DRIFT * (gpu_ns - reading0))


def test_two_readings_measure_the_drift_and_place_records_a_warm_wait_later():
    # a warm runner read the clock at start-up, waited 30 s for a candidate, was read again before the load, and
    # its batches came 2 s later: by then the offset has moved 653 us from the start-up one
    offset0, start, load = 600_000, 1_000_000, 31_000_000_000
    opening = LedgerChunk(
        kernels=[
            KernelRecord("globaltimer_stamp", _drifting(start, offset0, start), 0, 2, 7),
            KernelRecord("globaltimer_stamp", _drifting(load, offset0, start), 0, 3, 7),
        ]
    )
    batches = [(33_000_000_000 + i * 2_000_000, 33_000_000_000 + i * 2_000_000 + 300_000) for i in range(4)]

    def records(begin_ns, end_ns, seq):  # one own kernel per batch, from begin to end after the batch's start
        return [
            KernelRecord(
                "add_relu_kernel",
                _drifting(b + begin_ns, offset0, start),
                _drifting(b + end_ns, offset0, start),
                seq,
                7,
            )
            for b, _ in batches
        ]

    in_batch, between = records(100_000, 200_000, 4), records(1_000_000, 1_010_000, 5)
    chunk = LedgerChunk(kernels=in_batch + between)
    # a fixed offset from the start-up reading (as before): every in-batch record misplaced, an honest candidate's
    # calls "ran no own kernel"; that reading alone now carries the drift's bound, which widens each span past the
    # gaps: no honest record is lost, and nothing is told apart either
    fixed = ledger_clock.Anchor(offset0, 7)
    assert ledger_clock.split_by_spans(LedgerChunk(kernels=in_batch), batches, fixed)[0].kernels == []
    single = ledger_clock.runner_anchor(opening, start)
    assert ledger_clock.split_by_spans(chunk, batches, single)[0].kernels == in_batch + between
    # both readings: the drift measured, records placed within microseconds, the spans stay tight
    anchor = ledger_clock.runner_anchor(opening, start, load)
    assert (
        anchor.drift == pytest.approx(DRIFT, rel=1e-3)
        and anchor.drift_unknown == ledger_clock.MIN_DRIFT_UNKNOWN
    )
    inside, outside = ledger_clock.split_by_spans(chunk, batches, anchor)
    assert inside.kernels == in_batch and outside.kernels == between


def test_readings_too_close_to_measure_the_drift_leave_it_to_the_bound():
    # a one-shot runner: loaded 5 ms after its start-up reading; the readings' 0.4 us jitter alone could be 80 ppm
    opening = LedgerChunk(
        kernels=[
            KernelRecord("globaltimer_stamp", 1_000 + 600_000, 0, 2, 7),
            KernelRecord("globaltimer_stamp", 5_001_000 + 600_150, 0, 3, 7),  # 150 ns in 5 ms: "30 ppm"
        ]
    )
    anchor = ledger_clock.runner_anchor(opening, 1_000, 5_001_000)
    assert anchor == ledger_clock.runner_anchor(opening, 1_000)  # the start-up reading's, with the bound
    assert (anchor.offset_ns, anchor.drift, anchor.drift_unknown) == (600_000, 0.0, ledger_clock.MAX_DRIFT)


def test_a_drift_beyond_its_bound_is_not_believed():
    opening = LedgerChunk(
        kernels=[
            KernelRecord("globaltimer_stamp", 1_000 + 600_000, 0, 2, 7),
            KernelRecord("globaltimer_stamp", 1_000_000 + 900_000, 0, 3, 7),  # 300 us in 1 ms: 30 % drift
        ]
    )
    # the second record may not be the reading's (a candidate's kernel of that name, were the reading's lost): the
    # start-up reading's offset stands, with the bound
    anchor = ledger_clock.runner_anchor(opening, 1_000, 1_000_000)
    assert (anchor.offset_ns, anchor.drift, anchor.drift_unknown) == (600_000, 0.0, ledger_clock.MAX_DRIFT)
