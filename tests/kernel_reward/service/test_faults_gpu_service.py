"""GPU-only faults of the execution service: illegal memory access (poisoned CUDA context), a kernel that never
terminates, GPU memory exhaustion. Each gets its status and error, and the same pool then evaluates an honest
candidate correctly (the poisoned process was discarded)."""

from __future__ import annotations

import time

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.result import Status
from tests.support import service_programs as programs
from tests.support.service_helpers import pool_ids, wait_no_pool_processes

pytestmark = pytest.mark.gpu

ILLEGAL_ADDRESS = programs.CANDIDATE_ADD.replace(
    "tl.store(out_ptr + offsets, tl.load(a_ptr + offsets, mask=mask)",
    "tl.store(out_ptr + offsets, tl.load(a_ptr + offsets + (1 << 40))",
)

HUNG_KERNEL = programs.CANDIDATE_ADD.replace(
    "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n",
    "    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    # Volatile loads are side effects the compiler must keep, so the loop cannot be optimised away.
    "    i = 0\n"
    "    while tl.load(a_ptr, volatile=True) == tl.load(a_ptr, volatile=True):\n"
    "        i += 1\n",
)

GPU_OOM = programs.CANDIDATE_ADD.replace(
    "out = torch.empty_like(a)",
    "hog = torch.empty(1 << 40, dtype=torch.uint8, device=a.device)\n        out = torch.empty_like(a)",
)

CASES = {
    "illegal_address": (ILLEGAL_ADDRESS, {Status.CRASHED, Status.RUNTIME_ERROR}, "illegal"),
    "hung_kernel": (HUNG_KERNEL, {Status.TIMEOUT}, "wall-clock"),
    "gpu_oom": (GPU_OOM, {Status.RUNTIME_ERROR}, "memory"),
}


@pytest.fixture(scope="module")
def gpu_evaluator():
    with Evaluator(device="cuda:0", workers=2, timeout=20, pool_options={"wall_clock_grace_s": 1.0}) as ev:
        yield ev
    for pool_id in pool_ids(ev):
        assert wait_no_pool_processes(pool_id, timeout=30) == []


@pytest.mark.parametrize("kind", sorted(CASES))
def test_gpu_fault(gpu_evaluator, kind):
    code, statuses, needle = CASES[kind]
    start = time.monotonic()
    result = gpu_evaluator.evaluate(
        programs.REFERENCE_ADD, programs.fenced(code), timeout=8 if kind == "hung_kernel" else 20
    )
    print(
        kind,
        result.status.value,
        round(time.monotonic() - start, 2),
        (result.error or "")[:300].replace("\n", " | "),
    )
    assert result.status in statuses, (kind, result.status, result.error)
    assert needle in (result.error or "").lower(), result.error
    assert result.attempts == 1
    ok = gpu_evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(programs.CANDIDATE_ADD))
    assert ok.status == Status.CORRECT, ok.error
    assert ok.isolation.get("gpu_memory_fraction") is not None
    print("isolation", ok.isolation)
