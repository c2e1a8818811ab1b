"""Helpers shared by the execution-service tests: find the processes a pool started (to prove none leak)."""

from __future__ import annotations

import os
import time

from kernel_reward.service.zygote_client import POOL_ID_ENV


def pool_processes(pool_id: str) -> list[int]:
    """Pids of live (non-zombie) processes whose environment carries this pool's id (zygote, children, and
    anything a candidate started, since the environment is inherited)."""
    marker = f"{POOL_ID_ENV}={pool_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


def wait_no_pool_processes(pool_id: str, timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while True:
        left = pool_processes(pool_id)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def pool_ids(evaluator) -> list[str]:
    return [pool.pool_id for pool in evaluator.backend.pools]
