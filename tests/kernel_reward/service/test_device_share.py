"""Out of device memory under a worker's share: the pool runs the evaluation once more, alone (pool.DeviceShare)."""

from __future__ import annotations

import json
import threading
import time

from kernel_reward.evaluator import Evaluator
from kernel_reward.judge.pipeline import mark_out_of_memory
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status
from kernel_reward.service.pool import DeviceShare, needs_device_alone
from kernel_reward.service.zygote_client import timing_lock_file

FAKE = "tests.support.alone_fake_worker"


def test_an_evaluation_alone_waits_for_the_running_ones_and_keeps_new_ones_out(tmp_path):
    share = DeviceShare(
        timing_lock_file(tmp_path, "cuda:0", ".share")
    )  # threads of one process, as in a pool
    events: list[str] = []
    first_running, release_first = threading.Event(), threading.Event()

    def shared(name: str, hold: threading.Event | None = None) -> None:
        with share.shared():
            events.append(f"{name} start")
            if hold is not None:
                first_running.set()
                hold.wait(5)
            events.append(f"{name} end")

    def alone() -> None:
        with share.alone():
            events.append("alone start")
            time.sleep(0.1)
            events.append("alone end")

    threads = [threading.Thread(target=shared, args=("first", release_first))]
    threads[0].start()
    first_running.wait(5)
    threads.append(threading.Thread(target=alone))
    threads[1].start()
    time.sleep(0.2)  # the alone one is now waiting for "first"
    threads.append(threading.Thread(target=shared, args=("late",)))
    threads[2].start()
    time.sleep(0.2)
    assert events == ["first start"]  # "late" did not start beside the waiting alone evaluation
    release_first.set()
    for thread in threads:
        thread.join(5)
    assert events == ["first start", "first end", "alone start", "alone end", "late start", "late end"]


def test_out_of_memory_failures_are_marked_from_the_judge_or_a_sized_runner_call():
    """The judge's own out-of-memory is marked; the runner's text saying so (which a wrong kernel can print to buy
    an exclusive re-run) is marked only once the judge knows the call's size, and then the size decides."""
    gib = 1 << 30
    own = EvalResult(
        status=Status.RUNTIME_ERROR, error="out of GPU memory under this worker's cap (fewer workers...): ..."
    )
    mark_out_of_memory(own)
    assert needs_device_alone(own)
    claim = "candidate forward raised: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.00 GiB"
    unsized = EvalResult(status=Status.RUNTIME_ERROR, error=claim)
    mark_out_of_memory(unsized)
    assert "out_of_memory" not in unsized.flags and not needs_device_alone(unsized)
    large = EvalResult(
        status=Status.RUNTIME_ERROR, error=claim, memory={"call_bytes": 12 * gib, "share_bytes": 8 * gib}
    )
    mark_out_of_memory(large)
    assert needs_device_alone(large)
    small = EvalResult(
        status=Status.RUNTIME_ERROR, error=claim, memory={"call_bytes": 10 << 20, "share_bytes": 8 * gib}
    )
    mark_out_of_memory(small)
    assert not needs_device_alone(small)
    quoted = EvalResult(
        status=Status.RUNTIME_ERROR,
        error="candidate forward raised: out of GPU memory under this worker's cap",
    )
    mark_out_of_memory(quoted)
    assert not needs_device_alone(quoted)  # the judge's phrase, written by the candidate
    for result in (
        EvalResult(status=Status.RUNTIME_ERROR, error="MemoryError"),  # host memory: not the device's
        EvalResult(status=Status.INCORRECT, error="CUDA out of memory"),
    ):  # a verdict is never retried
        mark_out_of_memory(result)
        assert not needs_device_alone(result)


def test_only_a_task_large_against_its_share_is_worth_running_alone():
    gib = 1 << 30

    def oom(call_bytes: int | None, share_bytes: int | None) -> EvalResult:
        memory = {
            k: v for k, v in (("call_bytes", call_bytes), ("share_bytes", share_bytes)) if v is not None
        }
        return EvalResult(status=Status.RUNTIME_ERROR, flags=["out_of_memory"], memory=memory)

    assert needs_device_alone(oom(12 * gib, 8 * gib))  # a 6 GiB-in / 6 GiB-out task under an 8 GiB share
    assert not needs_device_alone(
        oom(10 << 20, 8 * gib)
    )  # 10 MB: the candidate allocated too much, not the judge
    assert needs_device_alone(oom(None, 8 * gib))  # failed before the reference was sized: give it the retry
    assert EvalRequest.from_dict(EvalRequest("ref", "x", alone=True).to_dict()).alone


def test_the_service_retries_an_out_of_memory_evaluation_alone_and_says_so():
    with Evaluator(device="cpu", workers=2, timeout=30, worker_module=FAKE) as evaluator:
        candidates = ["normal = 1"] * 4 + ["needs_device_alone = 1"] + ["normal = 2"] * 3
        results = evaluator.evaluate_many([("ref", candidate) for candidate in candidates])
    intervals = [json.loads(r.feedback) for r in results]
    retried = results[4]
    assert retried.status == Status.CORRECT and "retried_alone_after_out_of_memory" in retried.flags, retried
    start, end, alone = intervals[4]
    assert alone
    others = [(s, e) for i, (s, e, _) in enumerate(intervals) if i != 4]
    assert all(e <= start or s >= end for s, e in others), (intervals[4], others)  # nothing overlapped it
    assert all(
        r.status == Status.CORRECT and "retried_alone_after_out_of_memory" not in r.flags
        for i, r in enumerate(results)
        if i != 4
    )


def test_with_one_worker_there_is_nothing_to_wait_for_and_no_retry():
    with Evaluator(device="cpu", workers=1, timeout=30, worker_module=FAKE) as evaluator:
        result = evaluator.evaluate("ref", "needs_device_alone = 1")
    assert result.status == Status.RUNTIME_ERROR and "out_of_memory" in result.flags
    assert "retried_alone_after_out_of_memory" not in result.flags


def test_the_runner_takes_a_memory_cap_only_before_candidate_code(tmp_path):
    import socket

    import torch

    from kernel_reward.runner.runner import Runner

    ours, theirs = socket.socketpair()
    try:
        runner = Runner(theirs, torch.device("cpu"), tmp_path)
        assert runner._on_memory_cap({"fraction": 0.45}) == {"type": "memory_cap_ok", "fraction": 0.45}
        assert "must be in (0, 1]" in runner._on_memory_cap({"fraction": 1.5})["error"]
        assert runner._on_load({"code": "VALUE = 1\n"})["type"] == "loaded"
        assert "after the candidate was loaded" in runner._on_memory_cap({"fraction": 0.45})["error"]
    finally:
        ours.close()
        theirs.close()
