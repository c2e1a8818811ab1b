"""The CUDA driver's virtual memory API, for the exchange arena: one allocation exported as a POSIX descriptor
(``cuMemCreate`` + ``cuMemExportToShareableHandle``), imported and mapped in another process (``cuMemMap``), and
viewed as a torch tensor. Only what ``exchange`` needs; libcuda is there wherever a GPU is."""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass

import torch


class CudaArrayInterface:
    """Just enough of ``__cuda_array_interface__`` for ``torch.as_tensor`` to view raw device memory."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (pointer, False),
            "version": 2,
            "strides": None,
        }


def wrap_device_pointer(pointer: int, nbytes: int, device: torch.device) -> torch.Tensor:
    with torch.cuda.device(device):
        return torch.as_tensor(CudaArrayInterface(pointer, nbytes), device=device)


def device_index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


class _Location(ctypes.Structure):  # CUmemLocation
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):  # the allocFlags member of CUmemAllocationProp
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


@dataclass
class DeviceMemory:
    """One virtual-memory-API allocation mapped in this process: its address, mapped size, physical handle, and
    (exporter only) the descriptor that shares it."""

    pointer: int
    size: int
    handle: int
    fd: int | None = None


class Driver:
    """The few CUDA driver API calls the exchange needs (libcuda is there wherever a GPU is)."""

    PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
    POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
    READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
    u64, size_t = ctypes.c_uint64, ctypes.c_size_t

    def __init__(self) -> None:
        lib = self.lib = ctypes.CDLL("libcuda.so.1")
        u64, size_t, pu64 = self.u64, self.size_t, ctypes.POINTER(ctypes.c_uint64)
        lib.cuMemGetAllocationGranularity.argtypes = [
            ctypes.POINTER(size_t),
            ctypes.POINTER(_AllocationProp),
            ctypes.c_int,
        ]
        lib.cuMemCreate.argtypes = [pu64, size_t, ctypes.POINTER(_AllocationProp), u64]
        lib.cuMemExportToShareableHandle.argtypes = [ctypes.c_void_p, u64, ctypes.c_int, u64]
        lib.cuMemImportFromShareableHandle.argtypes = [pu64, ctypes.c_void_p, ctypes.c_int]
        lib.cuMemAddressReserve.argtypes = [pu64, size_t, size_t, u64, u64]
        lib.cuMemMap.argtypes = [u64, size_t, size_t, u64, u64]
        lib.cuMemSetAccess.argtypes = [u64, size_t, ctypes.POINTER(_AccessDesc), size_t]
        lib.cuMemUnmap.argtypes = [u64, size_t]
        lib.cuMemAddressFree.argtypes = [u64, size_t]
        lib.cuMemRelease.argtypes = [u64]

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"CUDA driver call {what} failed with error {code}")

    def _prop(self, device: int) -> _AllocationProp:
        prop = _AllocationProp()
        prop.type, prop.requestedHandleTypes = self.PINNED, self.POSIX_FD
        prop.location = _Location(self.ON_DEVICE, device)
        return prop

    def create(self, nbytes: int, device: int) -> DeviceMemory:
        """A new allocation of at least ``nbytes``, mapped read-write here and exported as a descriptor."""
        torch.cuda.init()  # the primary context must be current on this thread (torch makes it so)
        torch.cuda.current_stream().synchronize()
        prop = self._prop(device)
        granularity = self.size_t()
        self._check(
            self.lib.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(prop), 0),
            "cuMemGetAllocationGranularity",
        )
        size = -(-nbytes // granularity.value) * granularity.value
        handle = self.u64()
        self._check(
            self.lib.cuMemCreate(ctypes.byref(handle), size, ctypes.byref(prop), 0), f"cuMemCreate({size})"
        )
        fd = ctypes.c_int(-1)
        try:
            self._check(
                self.lib.cuMemExportToShareableHandle(ctypes.byref(fd), handle.value, self.POSIX_FD, 0),
                "cuMemExportToShareableHandle",
            )
            memory = DeviceMemory(self._map(handle.value, size, device), size, handle.value, fd.value)
        except BaseException:
            if fd.value >= 0:
                os.close(fd.value)
            self.lib.cuMemRelease(handle.value)
            raise
        os.set_inheritable(fd.value, False)
        return memory

    def import_fd(self, fd: int, size: int, device: int) -> DeviceMemory:
        """Map another process's exported allocation (``size``: its mapped size) read-write here."""
        torch.cuda.init()
        torch.empty(1, device="cuda")  # make the primary context current on this thread
        handle = self.u64()
        self._check(
            self.lib.cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), self.POSIX_FD),
            "cuMemImportFromShareableHandle",
        )
        try:
            return DeviceMemory(self._map(handle.value, size, device), size, handle.value)
        except BaseException:
            self.lib.cuMemRelease(handle.value)
            raise

    def _map(self, handle: int, size: int, device: int) -> int:
        pointer = self.u64()
        self._check(self.lib.cuMemAddressReserve(ctypes.byref(pointer), size, 0, 0, 0), "cuMemAddressReserve")
        try:
            self._check(self.lib.cuMemMap(pointer.value, size, 0, handle, 0), "cuMemMap")
            access = _AccessDesc(_Location(self.ON_DEVICE, device), self.READ_WRITE)
            self._check(
                self.lib.cuMemSetAccess(pointer.value, size, ctypes.byref(access), 1), "cuMemSetAccess"
            )
        except BaseException:
            self.lib.cuMemUnmap(pointer.value, size)  # fails harmlessly when nothing was mapped yet
            self.lib.cuMemAddressFree(pointer.value, size)
            raise
        return pointer.value

    def release(self, memory: DeviceMemory) -> None:
        """Unmap and free: the physical memory goes once every process that imported it has released it too."""
        self._check(self.lib.cuMemUnmap(memory.pointer, memory.size), "cuMemUnmap")
        self._check(self.lib.cuMemAddressFree(memory.pointer, memory.size), "cuMemAddressFree")
        self._check(self.lib.cuMemRelease(memory.handle), "cuMemRelease")
        if memory.fd is not None:
            os.close(memory.fd)
            memory.fd = None


@functools.cache
def driver() -> Driver:
    return Driver()
