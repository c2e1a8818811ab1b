"""The candidate's import holds no part of the GPU lock (host work for honest code, so a judge waiting to time never
waits for it): ``load_candidate`` sends the load alone; the ledger's clock reading before it is the judge's own
device step (``verdict``)."""

from __future__ import annotations

import contextlib

from kernel_reward.judge.remote import load_candidate

REPLIES = {
    "load": {"type": "loaded"},
}


class RecordingClient:
    """A runner that answers at once, and notes whether the judge held the shared side when it asked."""

    def __init__(self, turn: dict[str, bool]) -> None:
        self.turn = turn
        self.asked: list[tuple[str, bool]] = []

    def ask(self, message: dict, _expected: tuple[str, ...], fds=None) -> dict:
        self.asked.append((message["type"], self.turn["held"]))
        return REPLIES[message["type"]]


def _recording():
    turn = {"held": False}

    @contextlib.contextmanager
    def gpu_turn():
        turn["held"] = True
        try:
            yield
        finally:
            turn["held"] = False

    return RecordingClient(turn), gpu_turn


def test_the_import_holds_no_part_of_the_lock():
    client, _ = _recording()
    load_candidate(client, "import torch", allow_tf32=False)
    assert client.asked == [("load", False)]
