"""What of loading the candidate holds the GPU lock's shared side: its import never does (host work for honest
code, so a judge waiting to time never waits for it); the build and placing inputs do. The compile pass imports and
builds a candidate the checks never see, then compiles outside the lock."""

from __future__ import annotations

import contextlib

import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.remote import compile_beforehand, load_candidate, output_spec

REPLIES = {
    "load": {"type": "loaded"},
    "build": {"type": "built", "state_transfer": {}},
    "compile": {"type": "compiled", "error": None},
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


def test_the_compile_pass_builds_under_the_lock_and_compiles_outside_it():
    client, gpu_turn = _recording()
    arena = exchange.Arena(1 << 16, torch.device("cpu"))
    try:
        error = compile_beforehand(
            client,
            arena,
            "import torch",
            False,
            (7, [], {"weight": torch.ones(4)}),
            output_spec(torch.zeros(8)),
            1,
            lambda: [torch.randn(8)],
            gpu_turn,
        )
    finally:
        arena.close()
    assert error is None
    assert client.asked == [("load", False), ("build", True), ("compile", False)]
