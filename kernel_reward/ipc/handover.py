"""One run message handed to the runner behind the judge's gate (``stream_gate``), checked or timed alike:

    judge stream:   wait(host gate >= n) -> write(flag = n) -> wait(done >= n)
    runner stream:  wait(flag >= n) -> the calls -> write(done = n)

The runner replies once its calls are queued; the judge then opens its host gate and asks ``sync``: the runner
synchronises its stream, so an asynchronous CUDA error of its calls surfaces in that reply, as it would in an
ungated run's. On a GPU every run message goes this way (``RemoteCandidate`` for the checked calls, ``BatchClock``
around its own events for the timed ones), so a call cannot tell from its message, its stream or the messages
after it whether it is timed. ``Handover.of`` is None where the arena has no gate (CPU, or a driver without the
stream memory operations): runs are then ungated and the runner synchronises before it replies.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from kernel_reward.ipc import stream_gate
from kernel_reward.ipc.runner_channel import RunnerFault

BATCH_DEADLINE_S = 120.0  # a batch the GPU has not finished by then is the runner's timeout (wait_for_event)
SYNC = {"type": "sync"}


class Handover:
    """The arena's gate and signal words, and the steps of one gated run message."""

    def __init__(self, arena: Any) -> None:
        self.arena = arena
        self.gate: stream_gate.HostGate = arena.gate
        self.flag_word, self.done_word = arena.signal_words()

    @classmethod
    def of(cls, arena: Any) -> Handover | None:
        return cls(arena) if getattr(arena, "gate", None) is not None else None

    def gated(self, message: dict[str, Any], number: int) -> dict[str, Any]:
        """``message`` with the gate the runner's stream waits behind."""
        return {**message, "gate": {"n": number, "flag": self.flag_word, "done": self.done_word}}

    def queue(self, number: int) -> None:
        """Queue on the current stream: hand the GPU to the runner (``flag = number``) and wait for its ``done``."""
        stream_gate.write_value(self.arena.signal_address(self.flag_word), number)
        stream_gate.wait_value(self.arena.signal_address(self.done_word), number)

    def settle(self, end: torch.cuda.Event, client: Any) -> None:
        """Once the gate is open: ``sync`` (the runner's calls finished, or their error raised as a fault), then
        wait for ``end``, queued after the hand-over on the judge's stream."""
        client.ask(SYNC, ("synced",))
        self.finish(end, client)

    def finish(self, end: torch.cuda.Event, client: Any) -> None:
        """Wait for ``end`` (queued after the hand-over); a runner that never writes ``done`` is a timeout."""
        deadline = time.monotonic() + BATCH_DEADLINE_S
        if getattr(client, "deadline", None) is not None:
            deadline = min(deadline, client.deadline)
        try:
            stream_gate.wait_for_event(end, deadline, "gated batch")
        except TimeoutError as exc:
            raise RunnerFault(
                "timeout", "the candidate's batch did not finish on the GPU within the wall-clock limit"
            ) from exc

    def release(self, number: int) -> None:
        """After a failed batch: open the gate and write ``done`` from the host (``SharedWords``), so the judge's
        stream (waiting for a runner that is dead or lying) can go on to whatever the judge does next."""
        self.gate.open(number)
        self.arena.signals.write_from_host(self.done_word, number)

    def run(self, client: Any, message: dict[str, Any]) -> dict[str, Any]:
        """One checked run message, gated as a timed batch is; its ``ran`` reply once the calls have finished."""
        number = self.gate.close_next()
        try:
            self.queue(number)
            end = torch.cuda.Event()
            end.record()
            reply = client.ask(self.gated(message, number), ("ran",))
            self.gate.open(number)
            self.settle(end, client)
        except BaseException:
            self.release(number)
            raise
        return reply


def ask_run(client: Any, message: dict[str, Any], handover: Handover | None) -> dict[str, Any]:
    """A checked run message: through ``handover`` where the arena has a gate, else ungated (the runner then
    synchronises before it replies)."""
    return client.ask(message, ("ran",)) if handover is None else handover.run(client, message)
