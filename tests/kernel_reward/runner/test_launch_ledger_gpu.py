"""The launch ledger in a real sandboxed runner on a GPU (namespaces, its own uid, the seccomp filter): CUPTI
starts under the sandbox, the known-answer kernel is the first window's record, and a flush after a burst of
launches brings every one of them before the judge's marker."""

from __future__ import annotations

import secrets

import pytest

from kernel_reward import sandbox
from kernel_reward.ipc import runner_channel
from kernel_reward.ipc.ledger import KNOWN_ANSWER_KERNEL


@pytest.mark.gpu
def test_a_sandboxed_runner_records_its_kernels_for_the_judge():
    runner = runner_channel.spawn_runner_exec("cuda", sandbox.SandboxPolicy(), launch_ledger=True)
    try:
        runner_channel.wait_ready(runner)
        assert runner.ledger_state == "started", runner.ledger_state
        client = runner_channel.RunnerClient(runner)
        marker = secrets.randbits(63)
        client.ask({"type": "ledger", "marker": marker}, ("ledger_flushed",))
        chunk = runner.ledger.take(marker, timeout_s=30)
        assert [k.name for k in chunk.kernels].count(KNOWN_ANSWER_KERNEL) == 1, chunk
        assert chunk.dropped == 0 and chunk.malformed == 0
        assert all(k.end_ns >= k.start_ns > 0 for k in chunk.kernels)
        marker = secrets.randbits(63)
        client.ask({"type": "ledger", "marker": marker}, ("ledger_flushed",))
        assert runner.ledger.take(marker, timeout_s=30).kernels == []  # nothing ran since
    finally:
        runner.close()
