"""The runner's "clock" message: a reading of the GPU's clock for the launch ledger's second anchor, given only
before candidate code is loaded and only where a ledger runs on a GPU (``runner.runner.Runner._on_clock``)."""

import socket

import torch

from kernel_reward.runner.runner import Runner


def _runner(tmp_path, device="cpu"):
    ours, theirs = socket.socketpair()
    return Runner(ours, torch.device(device), tmp_path), (ours, theirs)


def test_a_reading_after_the_candidate_was_loaded_is_refused(tmp_path):
    runner, sockets = _runner(tmp_path)
    runner.ledger, runner.module = object(), object()
    try:
        assert runner._on_clock({"type": "clock"}) == {
            "type": "error",
            "error": "clock after the candidate was loaded",
        }
    finally:
        for sock in sockets:
            sock.close()


def test_no_reading_without_a_ledger_on_a_gpu(tmp_path):
    runner, sockets = _runner(tmp_path)
    try:
        assert runner._on_clock({"type": "clock"})["type"] == "error"  # no ledger
        runner.ledger = object()
        reply = runner._on_clock({"type": "clock"})  # a ledger, but the CPU
        assert reply == {"type": "error", "error": "clock readings need a launch ledger on a GPU"}
    finally:
        for sock in sockets:
            sock.close()
