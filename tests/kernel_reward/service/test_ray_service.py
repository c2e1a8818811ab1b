"""The Ray backend end to end on a local, CPU-only Ray instance bound to 127.0.0.1 (interpreter mode): results in
order, one per submission, faulty candidates classified, and a killed actor's work retried on another actor."""

from __future__ import annotations

import os
import threading
import time

import pytest

ray = pytest.importorskip("ray")

from kernel_reward.evaluator import Evaluator  # noqa: E402
from kernel_reward.result import Status  # noqa: E402
from tests.support import service_programs as programs  # noqa: E402
from tests.support.service_helpers import wait_no_pool_processes  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local_ray():
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray.init(
        address="local",
        include_dashboard=False,
        num_cpus=2,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        namespace="kernel_reward_test",
    )
    yield ray
    ray.shutdown()


def _pairs(count):
    pairs, expected = [], []
    faults = [
        (programs.CANDIDATE_WRONG, Status.INCORRECT),
        (programs.CANDIDATE_SYNTAX_ERROR, Status.COMPILE_ERROR),
        (programs.CANDIDATE_OOB_CRASH, Status.CRASHED),
    ]
    for i in range(count):
        code, status = (
            faults[i // 10 % len(faults)] if i % 10 == 9 else (programs.CANDIDATE_ADD, Status.CORRECT)
        )
        pairs.append((programs.REFERENCE_ADD.replace("N = 64", f"N = {16 + i}"), programs.fenced(code)))
        expected.append(status)
    return pairs, expected


def test_ray_backend_end_to_end_with_actor_failure(local_ray):
    pairs, expected = _pairs(60)
    with Evaluator(
        backend="ray", device="cpu", num_actors=2, workers=1, timeout=30, num_trials=2, shape_check="off"
    ) as ev:
        actors = ev.backend.actors
        assert len(actors) == 2
        pool_ids = [ray.get(a.info.remote())["pool_id"] for a in actors]
        killer = threading.Timer(4.0, lambda: ray.kill(actors[0]))
        killer.start()
        start = time.monotonic()
        results = ev.evaluate_many(pairs, progress=False)
        elapsed = time.monotonic() - start
        killer.join()
    assert len(results) == len(pairs)
    assert [r.status for r in results] == expected, [
        (i, r.status, r.error) for i, r in enumerate(results) if r.status != expected[i]
    ][:5]
    assert any(r.attempts >= 2 for r in results), "the killed actor's in-flight work should have been retried"
    assert max(r.attempts for r in results) <= 3
    for pool_id in pool_ids:
        assert wait_no_pool_processes(pool_id, timeout=20) == []
    print(f"ray: {len(pairs)} submissions in {elapsed:.1f} s")
