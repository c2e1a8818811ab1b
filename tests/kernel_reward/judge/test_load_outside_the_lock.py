"""The candidate's import is not a GPU phase: a judge waiting to time never waits for it. The ledger's clock reading
before it is one, and holds the lock's shared side."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

from kernel_reward.judge.remote import load_candidate


class RecordingClient:
    """A runner that answers at once, and notes whether the judge held the shared side when it asked."""

    def __init__(self, turn: dict[str, bool]) -> None:
        self.turn = turn
        self.process = SimpleNamespace(
            ledger_state="started", clock_stamp=11, load_clock_stamp=None, clock_stamp_error=None
        )
        self.asked: list[tuple[str, bool]] = []

    def ask(self, message: dict, _expected: tuple[str, ...]) -> dict:
        self.asked.append((message["type"], self.turn["held"]))
        return {"type": "clock", "reading": 12} if message["type"] == "clock" else {"type": "loaded"}


def test_the_clock_reading_holds_the_shared_side_and_the_import_does_not():
    turn = {"held": False}

    @contextlib.contextmanager
    def gpu_turn():
        turn["held"] = True
        try:
            yield
        finally:
            turn["held"] = False

    client = RecordingClient(turn)
    load_candidate(client, "import torch", allow_tf32=False, gpu_turn=gpu_turn)
    assert client.asked == [("clock", True), ("load", False)]
    assert client.process.load_clock_stamp == 12
