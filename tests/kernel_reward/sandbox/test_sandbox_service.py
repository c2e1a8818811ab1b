"""Unit tests of the sandbox layer's pure parts and parent-side helpers (no kernels, no pool)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kernel_reward.ipc import wire
from kernel_reward.sandbox import (
    Isolation,
    OutputTail,
    SandboxLimits,
    SandboxPolicy,
    kill_process_group,
    processes_of_uid,
    rss_bytes,
)


def test_output_tail_keeps_head_and_tail_and_counts_the_rest():
    tail = OutputTail(1000, head_fraction=0.2)
    tail.feed(b"H" * 150)
    tail.feed(b"M" * 10_000)
    tail.feed(b"T" * 700)
    text = tail.text()
    assert text.startswith("H" * 150 + "M" * 50)
    assert text.endswith("T" * 700)
    assert f"[... {10_850 - 1000} bytes of output dropped ...]" in text
    assert tail.total == 10_850
    short = OutputTail(1000)
    short.feed(b"hello")
    assert short.text() == "hello"


def test_limits_and_policy_validation_and_round_trip():
    with pytest.raises(ValueError, match="cpu_seconds"):
        SandboxLimits(cpu_seconds=0)
    with pytest.raises(ValueError, match="output_bytes"):
        SandboxLimits(output_bytes=10)
    policy = SandboxPolicy(limits=SandboxLimits(processes=7), isolate_network=False)
    assert SandboxPolicy.from_dict(policy.to_dict()) == policy


def test_isolation_level():
    full = Isolation(network_namespace=True, mount_namespace=True, private_tmp=True, uid=123456)
    assert full.level == "full" and full.to_dict()["level"] == "full"
    partial = Isolation(network_namespace=True, missing=["uid_drop: not running as root"])
    assert partial.level == "partial"
    assert Isolation().level == "none"


def test_kill_process_group_and_uid_scan():
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time, os; os.fork(); time.sleep(60)"], start_new_session=True
    )
    try:
        assert rss_bytes(proc.pid) > 0
        assert proc.pid in processes_of_uid(os.getuid())
        kill_process_group(proc.pid)
        assert proc.wait(timeout=10) == -9
    finally:
        kill_process_group(proc.pid)
    assert rss_bytes(proc.pid) is None
    kill_process_group(proc.pid)  # already gone: no error


def test_wire_round_trip_and_bounds():
    import socket

    a, b = socket.socketpair()
    wire.send_message(a, {"type": "result", "value": [1, 2, 3]})
    reader = wire.MessageReader(b)
    reader.feed()
    assert reader.pop() == {"type": "result", "value": [1, 2, 3]}
    a.sendall((wire.MAX_MESSAGE_BYTES + 1).to_bytes(4, "big"))
    reader.feed()
    with pytest.raises(wire.WireError, match="announced"):
        reader.pop()
    a.close()
    b.close()


def test_paths_inside_keeps_outermost_existing_paths_and_never_the_directory_itself(tmp_path):
    from kernel_reward.sandbox import paths_inside

    (tmp_path / "repo" / "pkg").mkdir(parents=True)
    (tmp_path / "venv" / "lib").mkdir(parents=True)
    paths = [
        str(tmp_path),
        str(tmp_path / "repo"),
        str(tmp_path / "repo" / "pkg"),
        str(tmp_path / "venv" / "lib"),
        str(tmp_path / "missing"),
        "/usr/lib",
    ]
    assert paths_inside(str(tmp_path), paths) == [str(tmp_path / "repo"), str(tmp_path / "venv" / "lib")]
