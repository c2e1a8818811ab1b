"""The judge's end of the runner channel takes nothing on trust: every way a reply can be wrong is a named fault.

"protocol" (a frame the honest harness never sends: the candidate wrote it) becomes ``hacked`` /
``forged_message``; "died" becomes ``crashed``; "error" (the harness's own failure report) ``runtime_error``;
"timeout" (the one-shot path's wall clock) ``timeout``.
"""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from kernel_reward.ipc.runner_channel import (
    MAX_REPLY_BYTES,
    RunnerClient,
    RunnerFault,
    RunnerProcess,
    calls_owing_own_kernels,
    outside_the_clock,
)


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def _ask_with_reply(raw: bytes | None, *, deadline: float | None = None) -> RunnerFault | dict:
    ours, theirs = socket.socketpair()

    def runner() -> None:
        theirs.recv(1 << 16)  # the request
        if raw is None:
            theirs.close()
        elif raw:
            theirs.sendall(raw)

    thread = threading.Thread(target=runner, daemon=True)
    thread.start()
    try:
        return RunnerClient(RunnerProcess(0, ours), deadline).ask({"type": "ping"}, ("pong",))
    except RunnerFault as fault:
        return fault
    finally:
        thread.join(timeout=5)
        ours.close()


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (
            _frame(json.dumps({"type": "result", "result": {"status": "correct", "reward": 9.9}}).encode()),
            "protocol",
        ),
        (_frame(b"not json"), "protocol"),
        (_frame(b"[1, 2]"), "protocol"),
        (_frame(("[" * 100_000 + "]" * 100_000).encode()), "protocol"),
        ((MAX_REPLY_BYTES + 1).to_bytes(4, "big"), "protocol"),
        (_frame(json.dumps({"type": "error", "error": "boom"}).encode()), "error"),
        (None, "died"),
    ],
)
def test_every_wrong_reply_is_a_named_fault(raw, kind):
    outcome = _ask_with_reply(raw)
    assert isinstance(outcome, RunnerFault) and outcome.kind == kind, outcome


def test_a_valid_reply_passes():
    assert _ask_with_reply(_frame(b'{"type": "pong"}')) == {"type": "pong"}


def test_silence_past_the_deadline_is_a_timeout():
    start = time.monotonic()
    outcome = _ask_with_reply(b"", deadline=time.monotonic() + 0.3)
    assert isinstance(outcome, RunnerFault) and outcome.kind == "timeout"
    assert time.monotonic() - start < 3


def test_calls_owing_own_kernels_are_counted_as_they_are_sent():
    """The launch ledger holds a window's own-kernel records to the calls the judge sent: every run message,
    checked or timed, counts its monitored, non-ablated calls; a dry run and other messages count none."""
    from kernel_reward.ipc import placement

    def call(**fields):
        return placement.call_entry([], [], "tensor", **fields)

    timed = placement.run_message(0, [call(), call(), call(ablate=True), call(monitor=False)])
    assert calls_owing_own_kernels(timed) == 2
    assert calls_owing_own_kernels(placement.run_message(0, [call(), call()], dry=True)) == 0
    assert calls_owing_own_kernels({"type": "ledger", "marker": 1}) == 0
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(_frame(b'{"type": "ran"}') + _frame(b'{"type": "pong"}'))
        client = RunnerClient(RunnerProcess(0, ours))
        client.ask(timed, ("ran",))
        client.ask({"type": "ping"}, ("pong",))
        assert client.counted_calls == 2


def test_messages_that_may_run_kernels_off_the_judges_clock_are_counted():
    """The launch ledger's window is cross-checked with the judge's clock only where every message that could have
    run a kernel in it was gated: a load, a build, a buffer reset, a coverage pass or an ungated run count."""
    from kernel_reward.ipc import placement

    run = placement.run_message(0, [placement.call_entry([], [], "tensor")])
    gated = {**run, "gate": {"n": 3, "flag": 0, "done": 1}}
    assert outside_the_clock(run) and not outside_the_clock(gated)
    for kind in ("load", "build", "reset_buffers", "coverage"):
        assert outside_the_clock({"type": kind}), kind
    for kind in ("ping", "ledger", "memory_cap", "arena", "sync"):
        assert not outside_the_clock({"type": kind}), kind
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(_frame(b'{"type": "ran"}') * 2 + _frame(b'{"type": "pong"}'))
        client = RunnerClient(RunnerProcess(0, ours))
        client.ask(gated, ("ran",))
        client.ask(run, ("ran",))
        client.ask({"type": "ping"}, ("pong",))
        assert client.unclocked_messages == 1


@pytest.mark.parametrize(
    ("sent", "stamp", "error"),
    [
        (1_765_000_000_123_456_789, 1_765_000_000_123_456_789, None),
        ("CompilationError: no ptxas", None, "CompilationError: no ptxas"),
        (True, None, None),
        (-5, None, None),
        (None, None, None),
    ],
    ids=["reading", "error", "bool", "negative", "absent"],
)
def test_the_runners_clock_reading_is_kept_only_as_a_positive_integer(sent, stamp, error):
    import json

    from kernel_reward.ipc.runner_channel import wait_ready

    ours, theirs = socket.socketpair()
    with ours, theirs:
        ready = {"type": "ready", "ledger": "started", "clock_stamp": sent}
        theirs.sendall(_frame(json.dumps(ready).encode()))
        process = RunnerProcess(0, ours)
        wait_ready(process)
    assert (process.clock_stamp, process.clock_stamp_error) == (stamp, error)


def _load_clock_with_reply(reply: dict | None, **process_fields) -> tuple[RunnerProcess, list[dict]]:
    """``read_load_clock`` against a runner that answers ``reply`` (None: is never asked); what it was sent."""
    from kernel_reward.ipc.runner_channel import read_load_clock

    ours, theirs = socket.socketpair()
    sent: list[dict] = []

    def runner() -> None:
        theirs.settimeout(0.3)  # never asked: nothing comes
        try:
            sent.append(json.loads(theirs.recv(1 << 16)[4:]))
        except TimeoutError:
            return
        theirs.sendall(_frame(json.dumps(reply).encode()))

    thread = threading.Thread(target=runner, daemon=True)
    thread.start()
    process = RunnerProcess(0, ours, **process_fields)
    try:
        read_load_clock(RunnerClient(process))
    finally:
        thread.join(timeout=5)
        ours.close()
        theirs.close()
    return process, sent


def test_a_runner_with_a_live_ledger_is_read_again_before_the_load():
    process, sent = _load_clock_with_reply(
        {"type": "clock", "reading": 9_000_000}, ledger_state="started", clock_stamp=5_000
    )
    assert sent == [{"type": "clock"}] and process.load_clock_stamp == 9_000_000


def test_a_refused_second_reading_leaves_the_first_and_says_why():
    process, _ = _load_clock_with_reply(
        {"type": "error", "error": "clock after the candidate was loaded"},
        ledger_state="started",
        clock_stamp=5_000,
    )
    assert process.load_clock_stamp is None and process.clock_stamp == 5_000
    assert "clock after the candidate was loaded" in process.clock_stamp_error


@pytest.mark.parametrize(("state", "stamp"), [(None, None), ("started", None), ("no CUPTI", 5_000)])
def test_no_second_reading_is_asked_without_a_live_ledger_and_a_first(state, stamp):
    process, sent = _load_clock_with_reply(None, ledger_state=state, clock_stamp=stamp)
    assert sent == [] and process.load_clock_stamp is None
