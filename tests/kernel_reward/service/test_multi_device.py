"""Every device of a host: one pool per device, one shared queue, a timing lock per device, workers split by device
count. On the CPU: pools over fake GPU counts (pure parts) and two real CPU pools sharing one queue."""

import pytest

from kernel_reward import ServiceConfig, evaluator
from kernel_reward.evaluator import Evaluator, resolve_devices
from kernel_reward.service import config as service_config
from kernel_reward.service import devices
from kernel_reward.service.config import PoolConfig
from kernel_reward.service.devices import GpuMemory
from kernel_reward.service.zygote_client import device_lock_file, usable_memory_fraction

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
    memory = {
        "cuda:0": GpuMemory(80.0, 80.0),
        "cuda:1": GpuMemory(24.0, 24.0),
        "cuda:2": GpuMemory(12.0, 12.0),
        "cuda:3": None,
    }
    monkeypatch.setattr(service_config.os, "sched_getaffinity", lambda _pid: set(range(64)))
    monkeypatch.setattr(service_config, "_gpu_count", lambda: 4)
    monkeypatch.setattr(service_config, "gpu_memory", memory.get)
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


def test_a_gpu_shared_with_a_trainer_gets_the_workers_and_shares_its_free_memory_holds(monkeypatch):
    """Memory other processes hold (a trainer on the same card) is not handed to workers: fewer workers, and the
    share each gets (and an evaluation run alone) is taken from what was free when the pool started."""
    assert GpuMemory(80.0, 80.0).usable_fraction == 0.9
    assert GpuMemory(40.0, 80.0).usable_fraction == 0.45
    assert GpuMemory(0.0, 80.0).usable_fraction == 0.01
    monkeypatch.setattr(service_config.os, "sched_getaffinity", lambda _pid: set(range(16)))
    monkeypatch.setattr(service_config, "_gpu_count", lambda: 1)
    monkeypatch.setattr(service_config, "gpu_memory", lambda _device: GpuMemory(20.0, 80.0))
    assert service_config.default_workers("cuda:0") == 3  # 0.9 x 20 GiB free / 6 GiB, not 8 from 80 GiB
    reads = []
    monkeypatch.setattr(
        service_config, "gpu_memory", lambda device: reads.append(device) or GpuMemory(20.0, 80.0)
    )
    pool = ServiceConfig().for_device("cuda:0")
    assert (pool.workers, pool.usable_memory_fraction) == (3, 0.225) and reads == ["cuda:0"]  # one reading
    assert usable_memory_fraction(pool) == 0.225  # what the zygote hands its workers (over 3) and a lone run
    configured = ServiceConfig(pool_options={"usable_memory_fraction": 0.5}).for_device("cuda:0")
    assert usable_memory_fraction(configured) == 0.5
    monkeypatch.setattr(service_config, "gpu_memory", lambda _device: None)
    assert (
        usable_memory_fraction(ServiceConfig().for_device("cuda:0")) == 0.9
    )  # unreadable: the whole usable card
    with pytest.raises(ValueError, match="usable_memory_fraction"):
        PoolConfig(device="cuda:0", usable_memory_fraction=1.5)


class _FakeNvml:
    """pynvml's calls that ``devices.gpu_memory`` makes, over two cards of 80 GiB with 30 and 70 GiB free."""

    GIB = 2**30
    cards = {"0": 30, "1": 70, "GPU-b": 70}

    def __init__(self):
        self.open = 0

    def nvmlInit(self):
        self.open += 1

    def nvmlShutdown(self):
        self.open -= 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return str(index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return uuid

    def nvmlDeviceGetMemoryInfo(self, handle):
        return type("Info", (), {"free": self.cards[handle] * self.GIB, "total": 80 * self.GIB})()


def test_free_memory_is_read_through_nvml_for_the_card_the_service_names(monkeypatch):
    import sys

    nvml = _FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert devices.gpu_memory("cuda:0") == GpuMemory(30.0, 80.0)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    assert devices.gpu_memory("cuda:0") == GpuMemory(70.0, 80.0)  # cuda:0 is the second card here
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-b")
    assert devices.gpu_memory("cuda:0") == GpuMemory(70.0, 80.0)  # named by UUID
    assert devices.gpu_memory("cuda:1") is None  # not visible to the service
    assert nvml.open == 0  # every read shuts NVML down again


def test_the_launch_ledger_runs_by_default_in_a_gpu_pool_and_not_in_a_cpu_one():
    """Unset, ``launch_ledger`` means "where there are kernels to record": on for a GPU pool; a CPU pool (the
    Triton interpreter, no CUDA) starts none. Set, it is obeyed, so a benchmark's "off" is off and a CPU pool
    asked for one says in each result why it has none."""
    assert PoolConfig(device="cuda:0").runs_launch_ledger
    assert not PoolConfig(device="cpu").runs_launch_ledger
    assert not PoolConfig(device="cuda:0", launch_ledger=False).runs_launch_ledger
    assert PoolConfig(device="cpu", launch_ledger=True).runs_launch_ledger
    assert ServiceConfig().for_device("cpu").launch_ledger is None
