"""The runner's "sync" message (``runner.runner.Runner._on_sync``), asked after every gated run once the judge has
opened its gate (``ipc.handover``): its stream's calls have finished when it answers, and an asynchronous CUDA error
of theirs comes back as the error reply an ungated run would have given."""

import socket
import threading

import torch

from kernel_reward.ipc import wire
from kernel_reward.runner import runner as runner_module
from kernel_reward.runner.runner import Runner


def _ask(runner: Runner, judge: socket.socket, message: dict) -> dict:
    serving = threading.Thread(target=runner.serve)
    serving.start()
    wire.send_message(judge, message)
    reply = wire.recv_message_blocking(judge)
    wire.send_message(judge, {"type": "bye"})
    serving.join(timeout=10)
    assert not serving.is_alive()
    return reply


def test_sync_answers_once_the_stream_is_idle(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(runner_module, "synchronize", lambda device: synced.append(device))
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reply = _ask(Runner(ours, torch.device("cpu"), tmp_path), theirs, {"type": "sync"})
    assert reply == {"type": "synced"} and synced == [torch.device("cpu")]


def test_an_asynchronous_error_of_the_calls_is_the_error_reply(tmp_path, monkeypatch):
    def fault(device):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(runner_module, "synchronize", fault)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reply = _ask(Runner(ours, torch.device("cpu"), tmp_path), theirs, {"type": "sync"})
    assert reply["type"] == "error" and "illegal memory access" in reply["error"]
