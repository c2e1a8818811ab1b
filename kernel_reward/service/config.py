"""How the execution service runs: one device's pool (``PoolConfig``) and the service over every device
(``ServiceConfig``), with the default number of concurrent candidates per device."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any

from kernel_reward import sandbox
from kernel_reward.runtime import Mode, mode_of
from kernel_reward.service.devices import GpuMemory, gpu_memory


@dataclass
class PoolConfig:
    """How one device's pool runs its children."""

    device: str = "cpu"  # "cpu" or "cuda:N" (a physical index as the service sees it)
    workers: int = 2  # candidates evaluated concurrently on this device (timing is still exclusive per GPU)
    # Children each slot keeps warming ahead of need. A GPU child's warm-up (CUDA context, self-check, profiler
    # start-up: seconds) is longer than most evaluations, so one spare per slot leaves slots waiting on it.
    warm_spares: int = 1
    policy: sandbox.SandboxPolicy = field(default_factory=sandbox.SandboxPolicy)
    worker_module: str = "kernel_reward.judge.pipeline"
    warmup_timeout_s: float = 180.0
    max_attempts: int = 3  # executions of one request in all (1 + infrastructure retries)
    wall_clock_grace_s: float = 2.0  # added to the request's timeout_s before the kill
    max_slot_wait_s: float = (
        600.0  # waiting for the GPU's timing slot pauses the wall clock, at most this long
    )
    gpu_memory_fraction: float | None = None  # None: the usable share below over the workers
    # The share of the GPU this pool spreads over its workers and gives an evaluation run alone. None: measured
    # when the pool starts, USABLE_DEVICE_MEMORY of the card less what other processes hold (a trainer on it).
    usable_memory_fraction: float | None = None
    lock_dir: str | None = None  # where per-GPU timing locks live (shared across services on one host)
    # Hold the GPU alone while timing: the other children's GPU phases (builds, correctness, shape checks) wait
    # for it (gpu_lock). Shared, honest kernels read ~0.2x instead of ~1x under load (docs/decisions.md).
    exclusive_gpu_timing: bool = True
    # A task's timing baseline (layout, calibration, the reference timed alone) measured by one judge is handed to
    # the next judges of the same task for this long and this many times (timing_priors; an RL group's worth),
    # then measured afresh; 0 uses: never.
    timing_prior_max_age_s: float = 30.0
    timing_prior_max_uses: int = 16
    # Start the launch ledger (CUPTI's kernel records, read by the judge: docs/security.md) in every runner;
    # coverage and the own-kernel count of timed calls then come from its records, not the runner's word. None:
    # on for a GPU pool, off for a CPU one (the interpreter launches no CUDA kernel to record).
    launch_ledger: bool | None = None
    env: dict[str, str] = field(
        default_factory=dict
    )  # environment of the zygote beyond sandbox.ENV_ALLOW_LIST

    @property
    def mode(self) -> Mode:
        """Where this pool runs candidates (decided by its device, once)."""
        return mode_of(self.device)

    @property
    def runs_launch_ledger(self) -> bool:
        """Whether this pool's runners start the launch ledger (``launch_ledger``, its default resolved)."""
        return self.mode is Mode.GPU if self.launch_ledger is None else self.launch_ledger

    def __post_init__(self) -> None:
        if self.device != "cpu" and not (self.device.startswith("cuda:") and self.device[5:].isdigit()):
            raise ValueError(f"PoolConfig.device must be 'cpu' or 'cuda:N', got {self.device!r}")
        if self.workers < 1:
            raise ValueError(f"PoolConfig.workers must be >= 1, got {self.workers}")
        if self.warm_spares < 1:
            raise ValueError(f"PoolConfig.warm_spares must be >= 1, got {self.warm_spares}")
        if self.max_attempts < 1:
            raise ValueError(f"PoolConfig.max_attempts must be >= 1, got {self.max_attempts}")
        if self.usable_memory_fraction is not None and not 0 < self.usable_memory_fraction <= 1:
            raise ValueError(
                f"PoolConfig.usable_memory_fraction must be in (0, 1], got {self.usable_memory_fraction!r}"
            )
        if not self.timing_prior_max_age_s >= 0 or self.timing_prior_max_uses < 0:
            raise ValueError(
                "PoolConfig.timing_prior_max_age_s and timing_prior_max_uses must be >= 0, got "
                f"{self.timing_prior_max_age_s!r}, {self.timing_prior_max_uses!r}"
            )


@dataclass(frozen=True)
class ServiceConfig:
    """How the service runs candidates, the same for every device it serves (a local pool per device, or a Ray
    actor per device): one value handed from the ``Evaluator`` to whichever backend runs the pools.
    ``PoolConfig`` is this plus the device (``for_device``)."""

    workers: int | None = None  # concurrent candidates per device; None: default_workers(device)
    policy: sandbox.SandboxPolicy = field(default_factory=sandbox.SandboxPolicy)
    worker_module: str = "kernel_reward.judge.pipeline"  # tests swap in a fake worker
    max_attempts: int = 3  # executions of one request in all (1 + infrastructure retries)
    pool_options: dict[str, Any] = field(default_factory=dict)  # any other PoolConfig field, e.g. warm_spares

    def __post_init__(self) -> None:
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"ServiceConfig.workers must be >= 1 (or None), got {self.workers}")
        if self.max_attempts < 1:
            raise ValueError(f"ServiceConfig.max_attempts must be >= 1, got {self.max_attempts}")
        reserved = {"device", "workers", "policy", "worker_module", "max_attempts"} & set(self.pool_options)
        if reserved:
            raise ValueError(
                f"ServiceConfig.pool_options cannot set {sorted(reserved)}: they are its own fields"
            )

    def for_device(self, device: str, workers: int | None = None) -> PoolConfig:
        """The pool configuration of one device (``workers`` overrides this config's own count). A GPU's free
        memory is read once, here: the pool's worker count and its usable share come from that one reading, and
        a zygote the pool restarts keeps the share (its own children's memory is not another process's)."""
        options = dict(self.pool_options)
        memory = gpu_memory(device) if device != "cpu" else None
        if memory is not None and options.get("usable_memory_fraction") is None:
            options["usable_memory_fraction"] = memory.usable_fraction
        return PoolConfig(
            device=device,
            workers=workers or self.workers or workers_for(device, memory),
            policy=self.policy,
            worker_module=self.worker_module,
            max_attempts=self.max_attempts,
            **options,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for a Ray actor's constructor."""
        return {**asdict(self), "policy": self.policy.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServiceConfig:
        return cls(**{**data, "policy": sandbox.SandboxPolicy.from_dict(data["policy"])})


# A GPU worker's device-memory share (0.9 of the card over its workers) stays at least this large: a KernelBench
# call of 1 GiB peaks near 2.5 GiB in the judge, and a task out of memory under its share runs again alone.
MIN_WORKER_SHARE_GIB = 6.0
MAX_GPU_WORKERS = 8  # beyond this, more judges per GPU wait on the timing slot and add no throughput


def default_workers(device: str) -> int:
    """Concurrent candidates per device, its GPU's memory read now (``workers_for``)."""
    return workers_for(device, gpu_memory(device) if device != "cpu" else None)


def workers_for(device: str, memory: GpuMemory | None) -> int:
    """Concurrent candidates per device: all cores on the CPU (interpreter); on a GPU, its share of the host's
    cores, no more than its usable memory (free memory, ``GpuMemory.usable_fraction``) holds at
    ``MIN_WORKER_SHARE_GIB`` each (so unlike GPUs of one host, or one that a trainer shares, each get their own
    count; unreadable memory: the cores alone), at most ``MAX_GPU_WORKERS`` and at least 2 (timing is exclusive,
    the rest overlaps)."""
    cores = len(os.sched_getaffinity(0))
    if device == "cpu":
        return max(1, cores)
    by_cores = cores // max(1, _gpu_count())
    by_memory = (
        int(memory.usable_fraction * memory.total_gib // MIN_WORKER_SHARE_GIB)
        if memory is not None
        else by_cores
    )
    return max(2, min(MAX_GPU_WORKERS, by_cores, by_memory))


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - no torch / broken driver: treat as no GPU
        return 0
