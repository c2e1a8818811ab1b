"""The launch ledger's runner side: the C source builds against the CUPTI of Triton's wheel, once per cache
folder, and says in words why it cannot start where there is no GPU driver. What it records on a GPU is
``benchmarks/launch_ledger_probe.py`` (and its gpu test)."""

from __future__ import annotations

import os
import shutil

import pytest

from kernel_reward.ipc import ledger_build
from kernel_reward.runner import launch_ledger


def _built(tmp_path):
    try:
        return ledger_build.build(tmp_path)
    except launch_ledger.LedgerUnavailable as exc:
        if shutil.which("cc") is None or "no CUPTI" in str(exc):
            pytest.skip(str(exc))
        raise


def test_it_builds_once_and_leaves_no_partial_files(tmp_path):
    library = _built(tmp_path)
    assert library.is_file() and library.stat().st_size > 0
    mtime = library.stat().st_mtime_ns
    assert ledger_build.build(tmp_path) == library and library.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == [library.name]


def test_without_a_gpu_starting_it_names_cuptis_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the gpu test covers starting it")
    ledger = launch_ledger.LaunchLedger(_built(tmp_path))
    read, write = os.pipe()
    try:
        with pytest.raises(launch_ledger.LedgerUnavailable, match="CUPTI_ERROR"):
            ledger.start(write)
    finally:
        os.close(read)
        os.close(write)


def test_a_broken_compiler_is_an_error_that_says_so(tmp_path, monkeypatch):
    try:
        ledger_build.cupti_paths()
    except launch_ledger.LedgerUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("CC", "false")
    with pytest.raises(launch_ledger.LedgerUnavailable, match="building the launch ledger failed"):
        ledger_build.build(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_runner_started_with_it_loads_it_in_the_sandbox_and_says_why_it_did_not_start(
    tmp_path, monkeypatch
):
    """The real path of a runner with a ledger, short of CUPTI: the judge builds it, the exec'd runner loads it
    before its sandbox, tries to start it once its device is up and reports the outcome; the judge holds the read
    end. Without a GPU driver CUPTI refuses, so the runner says so and serves on (its evaluations take the runner's
    profiling pass, flagged)."""
    import torch

    from kernel_reward import sandbox
    from kernel_reward.ipc import runner_channel

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the gpu test covers a started ledger")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    _built(tmp_path / "kernel_reward" / "launch-ledger")  # skips where it cannot be built
    policy = sandbox.SandboxPolicy(limits=sandbox.SandboxLimits(address_space_bytes=None))
    runner = runner_channel.spawn_runner_exec("cpu", policy, launch_ledger=True)
    try:
        runner_channel.wait_ready(runner)
        assert runner.ledger is not None and "CUPTI_ERROR" in (runner.ledger_state or ""), runner.ledger_state
        reply = runner_channel.RunnerClient(runner).ask({"type": "ledger", "marker": 1}, ("error",))
        assert "no launch ledger" in reply["error"]
    finally:
        runner.close()


def test_a_ledger_that_cannot_be_built_is_the_runners_state_not_an_error(tmp_path, monkeypatch):
    from kernel_reward import sandbox
    from kernel_reward.ipc import runner_channel

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", "false")
    policy = sandbox.SandboxPolicy(limits=sandbox.SandboxLimits(address_space_bytes=None))
    runner = runner_channel.spawn_runner_exec("cpu", policy, launch_ledger=True)
    try:
        runner_channel.wait_ready(runner)
        assert runner.ledger is None and (runner.ledger_state or "").startswith("not built:"), (
            runner.ledger_state
        )
    finally:
        runner.close()


def test_the_judge_looks_for_the_kernel_the_runner_runs_after_starting_it():
    from kernel_reward.ipc.ledger import KNOWN_ANSWER_KERNEL
    from kernel_reward.runner.selftest import _known_answer_add

    assert _known_answer_add.fn.__name__ == KNOWN_ANSWER_KERNEL
