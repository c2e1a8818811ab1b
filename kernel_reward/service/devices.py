"""The GPUs a service runs on: which physical card a service's ``cuda:N`` names, and how much of its memory is
free when a pool starts (read through NVML, which opens no CUDA context: the service's process stays without one)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from kernel_reward.request import USABLE_DEVICE_MEMORY


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory as the service finds it when a pool starts."""

    free_gib: float
    total_gib: float

    @property
    def usable_fraction(self) -> float:
        """Pure: the share of the card the pool may hand its workers: ``USABLE_DEVICE_MEMORY`` of it, less what
        other processes already hold (a trainer colocated on the GPU), never below 1 % of the card."""
        free_share = max(0.0, min(1.0, self.free_gib / self.total_gib))
        return round(max(0.01, USABLE_DEVICE_MEMORY * free_share), 3)


def physical_gpu(index: int) -> str:
    """The card behind the service's ``cuda:N``: its index or UUID in ``CUDA_VISIBLE_DEVICES``, else N."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or visible.strip() == "":
        return str(index)
    ids = [part.strip() for part in visible.split(",") if part.strip()]
    if index >= len(ids):
        raise ValueError(f"cuda:{index} is not among CUDA_VISIBLE_DEVICES={visible!r}")
    return ids[index]


def gpu_memory(device: str) -> GpuMemory | None:
    """Free and total memory of ``device`` ("cuda:N", as the service numbers GPUs) through NVML, which opens no
    CUDA context in this process; the total alone (counted as free) through torch where NVML is missing; None when
    neither can read it (no driver here)."""
    try:
        physical = physical_gpu(int(device.split(":")[1]))
    except (IndexError, ValueError):
        return None
    try:
        import pynvml

        # NVML numbers cards in PCI bus order, as CUDA does for cards alike (and under CUDA_DEVICE_ORDER=PCI_BUS_ID).
        pynvml.nvmlInit()
        try:
            handle = (
                pynvml.nvmlDeviceGetHandleByIndex(int(physical))
                if physical.isdigit()
                else pynvml.nvmlDeviceGetHandleByUUID(physical)
            )
            info = pynvml.nvmlDeviceGetMemoryInfo(handle)
            return GpuMemory(free_gib=info.free / 2**30, total_gib=info.total / 2**30)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML (or a MIG slice it cannot name): the total through torch
        pass
    try:
        import torch

        total = torch.cuda.get_device_properties(int(device.split(":")[1])).total_memory / 2**30
        return GpuMemory(free_gib=total, total_gib=total)
    except Exception:  # noqa: BLE001 - no torch / no such device / broken driver: place by cores alone
        return None
