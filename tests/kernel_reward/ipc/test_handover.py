"""A checked run message on a GPU goes as a timed one does (``ipc.handover``): behind the judge's closed gate, the
gate opened only once the runner has answered, then ``sync``, then the judge's stream waited for. Every failure
releases the judge's stream. The driver's stream operations are stood in for, so this runs on the CPU; the GPU
test is tests/kernel_reward/judge/test_gated_checked_calls_gpu.py."""

from __future__ import annotations

import pytest
import torch

from kernel_reward.ipc import handover as handover_module
from kernel_reward.ipc import placement
from kernel_reward.ipc.handover import Handover
from kernel_reward.ipc.runner_channel import RunnerFault


class Gate:
    def __init__(self, events: list[str]) -> None:
        self.events, self.count = events, 40

    def close_next(self) -> int:
        self.count += 1
        self.events.append(f"close {self.count}")
        return self.count

    def open(self, number: int) -> None:
        self.events.append(f"open {number}")


class Signals:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def write_from_host(self, offset: int, value: int) -> None:
        self.events.append(f"host wrote {value} at {offset}")


class Arena:
    def __init__(self, events: list[str]) -> None:
        self.gate, self.signals = Gate(events), Signals(events)

    def signal_words(self) -> tuple[int, int]:
        return 0, 4

    def signal_address(self, offset: int) -> int:
        return 0x1000 + offset


class Event:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def record(self) -> None:
        self.events.append("end queued")


class Client:
    deadline = None

    def __init__(self, events: list[str], fail_on: str | None = None) -> None:
        self.events, self.fail_on, self.sent = events, fail_on, []

    def ask(self, message: dict, expect: tuple) -> dict:
        self.sent.append(message)
        self.events.append(f"asked {message['type']}")
        if message["type"] == self.fail_on:
            raise RunnerFault("error", f"the candidate's process failed on {message['type']!r}: CUDA error")
        return {"type": expect[0], "calls": [{"ok": True}]}


@pytest.fixture
def events(monkeypatch) -> list[str]:
    events: list[str] = []
    monkeypatch.setattr(
        handover_module.stream_gate, "write_value", lambda address, n: events.append(f"flag {n} queued")
    )
    monkeypatch.setattr(
        handover_module.stream_gate, "wait_value", lambda address, n: events.append(f"wait done {n} queued")
    )
    monkeypatch.setattr(
        handover_module.stream_gate,
        "wait_for_event",
        lambda event, deadline, what: events.append("end waited"),
    )
    monkeypatch.setattr(handover_module.torch.cuda, "Event", lambda: Event(events))
    return events


def _message() -> dict:
    return placement.run_message(0, [placement.call_entry([], [], "tensor")])


def test_a_checked_message_waits_behind_the_gate_that_opens_only_after_the_reply(events):
    client = Client(events)
    reply = Handover(Arena(events)).run(client, _message())
    assert reply["type"] == "ran"
    assert events == [
        "close 41",
        "flag 41 queued",
        "wait done 41 queued",
        "end queued",
        "asked run",
        "open 41",
        "asked sync",
        "end waited",
    ]
    run, sync = client.sent
    assert run["gate"] == {"n": 41, "flag": 0, "done": 4}
    assert {key: value for key, value in run.items() if key != "gate"} == _message()  # the same fields
    assert sync == {"type": "sync"}


@pytest.mark.parametrize("fail_on", ["run", "sync"])
def test_a_failed_run_or_sync_releases_the_judges_stream_and_is_raised(events, fail_on):
    """A runner that fails its run, or whose stream faults (the error surfaces at ``sync``), never writes ``done``:
    the judge opens its gate and writes ``done`` itself, then reports the fault."""
    with pytest.raises(RunnerFault, match=f"failed on '{fail_on}'"):
        Handover(Arena(events)).run(Client(events, fail_on), _message())
    assert events[-2:] == ["open 41", "host wrote 41 at 4"]


def test_a_gated_batch_that_never_ends_is_the_runners_timeout(monkeypatch, events):
    def never(event, deadline, what):
        raise TimeoutError(what)

    monkeypatch.setattr(handover_module.stream_gate, "wait_for_event", never)
    with pytest.raises(RunnerFault) as caught:
        Handover(Arena(events)).run(Client(events), _message())
    assert caught.value.kind == "timeout"
    assert events[-2:] == ["open 41", "host wrote 41 at 4"]


def test_there_is_no_handover_where_the_arena_has_no_gate():
    from kernel_reward.ipc import exchange

    arena = exchange.Arena(4096, torch.device("cpu"))
    try:
        assert arena.gate is None and Handover.of(arena) is None
    finally:
        arena.close()
