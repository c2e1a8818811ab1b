"""Every device of a host: one pool per device, one shared queue, a timing lock per device, workers split by device
count. On the CPU: pools over fake GPU counts (pure parts) and two real CPU pools sharing one queue."""

import pytest

from kernel_reward import evaluator
from kernel_reward.evaluator import Evaluator, resolve_devices
from kernel_reward.service import config as service_config
from kernel_reward.service.config import PoolConfig
from kernel_reward.service.zygote_client import device_lock_file

FAKE = "tests.support.service_fake_worker"
SLOW = "import time\n\ndef main():\n    time.sleep(0.4)\n    return 1\n"


def test_every_visible_gpu_gets_a_pool(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    assert resolve_devices(None) == ["cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert resolve_devices("cuda") == resolve_devices(None)
    assert resolve_devices(["cuda:1", "cuda:3"]) == ["cuda:1", "cuda:3"]
    with pytest.raises(ValueError, match="bad device"):
        resolve_devices("cuda:x")
    with pytest.raises(ValueError, match="empty device list"):
        resolve_devices([])
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert resolve_devices(None) == ["cpu"]
    with pytest.raises(ValueError, match="no CUDA GPU"):
        resolve_devices("cuda")


def test_workers_are_split_over_the_gpus_and_each_gpu_times_under_its_own_lock(monkeypatch, tmp_path):
    monkeypatch.setattr(service_config.os, "sched_getaffinity", lambda _pid: set(range(16)))
    monkeypatch.setattr(service_config, "_gpu_count", lambda: 4)
    assert service_config.default_workers("cuda:0") == 4  # 16 cores over 4 GPUs
    monkeypatch.setattr(service_config, "_gpu_count", lambda: 8)
    assert (
        service_config.default_workers("cuda:0") == 2
    )  # never under 2: timing is exclusive, the rest overlaps
    locks = {
        device_lock_file(PoolConfig(device=f"cuda:{i}", lock_dir=str(tmp_path)), "timing") for i in range(4)
    }
    assert len(locks) == 4  # one timing slot per GPU: timing on one never waits for another


def test_workers_are_placed_by_each_gpus_memory(monkeypatch):
    """A GPU whose memory would give a worker less than MIN_WORKER_SHARE_GIB gets fewer workers than its cores
    allow; unlike GPUs of one host each get their own count; unreadable memory falls back to the cores."""
    memory = {"cuda:0": 80.0, "cuda:1": 24.0, "cuda:2": 12.0, "cuda:3": None}
    monkeypatch.setattr(service_config.os, "sched_getaffinity", lambda _pid: set(range(64)))
    monkeypatch.setattr(service_config, "_gpu_count", lambda: 4)
    monkeypatch.setattr(service_config, "_gpu_memory_gib", memory.get)
    monkeypatch.setattr(service_config, "MAX_GPU_WORKERS", 64)
    counts = {device: service_config.default_workers(device) for device in memory}
    assert counts == {"cuda:0": 12, "cuda:1": 3, "cuda:2": 2, "cuda:3": 16}, counts  # 0.9 x GiB / 6; 64 / 4
    monkeypatch.setattr(service_config, "MAX_GPU_WORKERS", 8)
    assert service_config.default_workers("cuda:0") == 8


def test_two_device_pools_share_one_queue_and_both_take_work():
    with Evaluator(device=["cpu", "cpu"], workers=1, worker_module=FAKE, timeout=60, progress=False) as ev:
        results = ev.evaluate_many([("x = 1", SLOW)] * 6)
        completed = [pool.completed for pool in ev.backend.pools]
    assert [r.status.value for r in results] == ["correct"] * 6
    assert sum(completed) == 6 and min(completed) >= 1, completed
    assert isinstance(ev.backend, evaluator.LocalBackend)
