"""The judge's exchange arena: the only memory the judge and the untrusted runner share.

The judge owns one flat byte buffer per evaluation and places in it exactly what the runner may see: the
reference's weights while ``ModelNew`` is built, the inputs of the calls it asks for, and poisoned output slots
for the runner to fill. Everything else of the judge (the reference, its outputs, pristine input copies, the
seeds) lives in the judge's private memory, in another process.

* CPU (Triton interpreter): a sealed ``memfd`` (no grow, no shrink: a runner that could truncate it would make
  the judge's next access a SIGBUS), mapped by both; its descriptor crosses the channel by SCM_RIGHTS.
* CUDA: one dedicated driver allocation (``cuMemCreate`` at the 2 MB granularity, ``cuda_vmm``), exported as a
  POSIX descriptor that crosses by SCM_RIGHTS and is mapped by the runner with ``cuMemMap``: nothing else of the
  judge's shares its pages, and the runner reads it at the judge's speed (docs/decisions.md).

Tensors cross as ``TensorRef`` (offset, dtype, shape, stride) views of the arena; other argument values as JSON.
"""

from __future__ import annotations

import fcntl
import mmap
import os
from dataclasses import dataclass
from typing import Any

import torch

from kernel_reward.common.tensors import only_tensors
from kernel_reward.ipc import cuda_vmm, stream_gate

ALIGN = 256  # bytes: every view starts at a multiple (vectorised loads in kernels assume aligned pointers)
_DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
        torch.complex64,
        torch.complex128,
    )
}


class ExchangeError(ValueError):
    """A tensor reference or argument encoding that does not describe a valid view of the arena."""


@dataclass(frozen=True)
class TensorRef:
    """A strided view of the arena: ``offset`` bytes in, ``dtype`` elements, ``shape`` / ``stride`` in elements."""

    offset: int
    dtype: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    @property
    def span_elements(self) -> int:
        """Elements from the first to one past the last addressed element (0 for an empty tensor)."""
        if any(size == 0 for size in self.shape):
            return 0
        return 1 + sum((size - 1) * step for size, step in zip(self.shape, self.stride, strict=True))

    @property
    def nbytes(self) -> int:
        return self.span_elements * torch.empty((), dtype=dtype_of(self.dtype)).element_size()

    def to_json(self) -> dict[str, Any]:
        return {"o": self.offset, "d": self.dtype, "s": list(self.shape), "t": list(self.stride)}

    @classmethod
    def from_json(cls, data: Any) -> TensorRef:
        try:
            ref = cls(
                int(data["o"]),
                str(data["d"]),
                tuple(int(s) for s in data["s"]),
                tuple(int(t) for t in data["t"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ExchangeError(f"malformed tensor reference {data!r:.200}: {exc}") from exc
        if (
            len(ref.shape) != len(ref.stride)
            or any(s < 0 for s in ref.shape)
            or any(t < 0 for t in ref.stride)
        ):
            raise ExchangeError(f"bad shape/stride in tensor reference {data!r:.200}")
        dtype_of(ref.dtype)
        return ref


def dtype_of(name: str) -> torch.dtype:
    try:
        return _DTYPES[name]
    except KeyError as exc:
        raise ExchangeError(
            f"dtype {name!r} cannot cross the exchange (supported: {sorted(_DTYPES)})"
        ) from exc


def view(arena: torch.Tensor, ref: TensorRef) -> torch.Tensor:
    """The tensor ``ref`` describes, as a view of ``arena`` (a flat uint8 tensor). Bounds are checked."""
    dtype = dtype_of(ref.dtype)
    itemsize = torch.empty((), dtype=dtype).element_size()
    end = ref.offset + ref.span_elements * itemsize
    if ref.offset < 0 or ref.offset % itemsize or end > arena.numel():
        raise ExchangeError(f"tensor reference [{ref.offset}, {end}) outside the {arena.numel()}-byte arena")
    if ref.span_elements == 0:
        return torch.empty(ref.shape, dtype=dtype, device=arena.device)
    flat = arena[ref.offset : end].view(dtype)
    return flat.as_strided(ref.shape, ref.stride)


class Layout:
    """Bump allocator over the arena (judge side): where the next view goes. ``reset`` between phases."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.used = 0

    def reset(self) -> None:
        self.used = 0

    def place(
        self, shape: tuple[int, ...], dtype: torch.dtype, stride: tuple[int, ...] | None = None
    ) -> TensorRef:
        stride = tuple(stride) if stride is not None else _contiguous_stride(shape)
        name = str(dtype).removeprefix("torch.")
        dtype_of(name)
        ref = TensorRef(self.used, name, tuple(shape), stride)
        end = self.used + ref.nbytes
        if end > self.capacity:
            raise MemoryError(f"exchange arena full: {end} bytes needed, {self.capacity} available")
        self.used = -(-end // ALIGN) * ALIGN
        return ref


def _contiguous_stride(shape: tuple[int, ...]) -> tuple[int, ...]:
    stride, step = [], 1
    for size in reversed(shape):
        stride.append(step)
        step *= max(size, 1)
    return tuple(reversed(stride))


def placement_stride(tensor: torch.Tensor) -> tuple[int, ...]:
    """The stride a tensor keeps in the arena: its own when it is dense and non-overlapping (a transposed input
    stays transposed, as the task wrote it), else contiguous."""
    if _dense_permutation(tuple(tensor.shape), tuple(tensor.stride())):
        return tuple(tensor.stride())
    return _contiguous_stride(tuple(tensor.shape))


def _dense_permutation(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    """Pure: do these strides lay the elements out densely, without overlap, in some order of the dims?"""
    expected = 1
    for size, step in sorted(zip(shape, stride, strict=True), key=lambda pair: pair[1]):
        if size == 1:
            continue
        if step != expected:
            return False
        expected *= size
    return True


# ----------------------------------------------------------------------------------------- argument encoding


def encode_args(values: list[Any], place: Any) -> list[Any]:
    """JSON form of an argument list. ``place(tensor) -> TensorRef`` puts a tensor into the arena. Plain values
    (numbers, strings, None, nested lists/tuples of them, dtypes) travel as JSON; anything else is refused."""
    return [_encode(value, place) for value in values]


def _encode(value: Any, place: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {"tensor": place(value).to_json(), "grad": bool(value.requires_grad)}
    if value is None or isinstance(value, bool | int | float | str):
        return {"value": value}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, list | tuple):
        return {"tuple" if isinstance(value, tuple) else "list": [_encode(item, place) for item in value]}
    raise ExchangeError(
        f"argument of type {type(value).__name__} cannot be passed to the candidate's process"
    )


def decode_args(items: Any, arena: torch.Tensor) -> list[Any]:
    """Runner side: the argument list ``encode_args`` described, tensors as views of ``arena``."""
    if not isinstance(items, list):
        raise ExchangeError("arguments must be a list")
    return [_decode(item, arena) for item in items]


def tensor_views(items: Any, arena: torch.Tensor) -> list[torch.Tensor]:
    """The tensor arguments of an encoded argument list, as views of ``arena`` (argument order)."""
    return only_tensors(decode_args(items, arena))


def _decode(item: Any, arena: torch.Tensor) -> Any:
    if not isinstance(item, dict) or len(item) not in (1, 2):
        raise ExchangeError(f"malformed argument {item!r:.200}")
    if "tensor" in item:
        tensor = view(arena, TensorRef.from_json(item["tensor"]))
        return tensor.requires_grad_(True) if item.get("grad") and tensor.is_floating_point() else tensor
    if "value" in item:
        return item["value"]
    if "dtype" in item:
        return dtype_of(item["dtype"])
    if "list" in item:
        return [_decode(x, arena) for x in item["list"]]
    if "tuple" in item:
        return tuple(_decode(x, arena) for x in item["tuple"])
    raise ExchangeError(f"malformed argument {item!r:.200}")


# ----------------------------------------------------------------------------------------- the shared buffer


class Arena:
    """Judge side: the shared buffer, as a flat uint8 tensor (``tensor``), and what the runner needs to map it
    (``share()``: a JSON description plus, on CPU, the descriptor to pass)."""

    def __init__(self, nbytes: int, device: torch.device) -> None:
        self.nbytes = max(int(nbytes), ALIGN)
        self.device = device
        self.fd: int | None = None
        self._mapping: mmap.mmap | None = None
        self._cuda: cuda_vmm.DeviceMemory | None = None
        self.signals: stream_gate.SharedWords | None = (
            None  # CUDA: the words the two processes' streams meet at
        )
        # CUDA with the driver's stream memory operations: the judge's one gate, which every run message waits
        # behind (``handover``, ``timing.batch_clock``), so its numbers rise across checked and timed messages alike
        self.gate: stream_gate.HostGate | None = None
        if device.type == "cpu":
            self.fd = os.memfd_create("kernel_reward_arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(self.fd, self.nbytes)
            fcntl.fcntl(
                self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
            )
            self._mapping = mmap.mmap(self.fd, self.nbytes)
            self.tensor = torch.frombuffer(self._mapping, dtype=torch.uint8)
        else:
            self._cuda = cuda_vmm.driver().create(self.nbytes, cuda_vmm.device_index(device))
            self.tensor = cuda_vmm.wrap_device_pointer(self._cuda.pointer, self.nbytes, device)
            self.signals = stream_gate.SharedWords()
            if stream_gate.available(device):
                self.gate = stream_gate.HostGate(stream_gate.OPEN_AFTER_S)
        self.layout = Layout(self.nbytes)

    def signal_words(self) -> tuple[int, int]:
        """Offsets of the (flag, done) words in ``signals``: the judge writes ``flag`` when a batch's inputs are in,
        the runner ``done`` after its calls."""
        return stream_gate.SharedWords.FLAG, stream_gate.SharedWords.DONE

    def signal_address(self, offset: int) -> int:
        """Device address of a signal word (CUDA only)."""
        if self.signals is None:
            raise ExchangeError("only a CUDA arena has signal words")
        return self.signals.address(offset)

    def address(self, offset: int) -> int:
        """Device address of a byte of the arena (CUDA only)."""
        if self._cuda is None:
            raise ExchangeError("only a CUDA arena has device addresses")
        return self._cuda.pointer + offset

    def reserve(
        self, shape: tuple[int, ...], dtype: torch.dtype, stride: tuple[int, ...] | None = None
    ) -> TensorRef:
        """The next free place for such a tensor (MemoryError when the arena is full)."""
        return self.layout.place(shape, dtype, stride)

    def put(self, tensor: torch.Tensor) -> TensorRef:
        """Copy ``tensor`` into the next free place (its own layout where dense, see ``placement_stride``)."""
        ref = self.reserve(tuple(tensor.shape), tensor.dtype, placement_stride(tensor))
        with torch.no_grad():
            view(self.tensor, ref).copy_(tensor)
        return ref

    def share(self) -> tuple[dict[str, Any], list[int]]:
        """(message fields, descriptors to send with them)."""
        if self.fd is not None:
            return {"kind": "memfd", "nbytes": self.nbytes}, [self.fd]
        return {"kind": "cuda_vmm", "nbytes": self.nbytes, "mapped_bytes": self._cuda.size}, [
            self._cuda.fd,
            self.signals.fd,
        ]

    def close(self) -> None:
        release_mapped(self, self.device)
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def release_mapped(end: Arena | MappedArena, device: torch.device | None = None) -> None:
    """What both ends of an arena hold, let go: the tensor view (first, before the memory goes), the memfd
    mapping, the CUDA mapping (after ``device``, default the current one, is idle) and the signal words. Idempotent."""
    end.tensor = None
    if end._mapping is not None:
        try:
            end._mapping.close()
        except BufferError:  # a view still exported somewhere: the mapping goes with the process
            pass
        end._mapping = None
    if end._cuda is not None:
        torch.cuda.synchronize(device)
        cuda_vmm.driver().release(end._cuda)
        end._cuda = None
    if end.signals is not None:
        end.signals.close()
        end.signals = None


class MappedArena:
    """Runner side: the judge's arena mapped into this process, as a flat uint8 tensor."""

    def __init__(self, description: dict[str, Any], fds: list[int], device: torch.device) -> None:
        kind = description.get("kind")
        nbytes = description.get("nbytes")
        if not isinstance(nbytes, int) or nbytes <= 0:
            raise ExchangeError(f"bad arena size {nbytes!r}")
        self._mapping: mmap.mmap | None = None
        self._cuda: cuda_vmm.DeviceMemory | None = None
        self.signals: stream_gate.SharedWords | None = None
        if kind == "memfd":
            if len(fds) != 1:
                raise ExchangeError("a memfd arena needs exactly one descriptor")
            self._mapping = mmap.mmap(fds[0], nbytes)
            os.close(fds[0])
            self.tensor = torch.frombuffer(self._mapping, dtype=torch.uint8)
        elif kind == "cuda_vmm":
            mapped = description.get("mapped_bytes")
            if len(fds) != 2:
                raise ExchangeError(
                    "a CUDA arena needs exactly two descriptors (its memory, its signal words)"
                )
            if not isinstance(mapped, int) or mapped < nbytes:
                raise ExchangeError(f"bad mapped size {mapped!r} for an arena of {nbytes} bytes")
            try:
                self._cuda = cuda_vmm.driver().import_fd(fds[0], mapped, cuda_vmm.device_index(device))
            finally:
                os.close(fds[0])
            self.tensor = cuda_vmm.wrap_device_pointer(self._cuda.pointer, nbytes, device)
            self.signals = stream_gate.SharedWords(fds[1])
        else:
            raise ExchangeError(f"unknown arena kind {kind!r}")
        self.nbytes = nbytes

    def close(self) -> None:
        """Unmap the arena and its signal words (the judge's memory stays until the judge releases it too). A
        runner that is handed a new arena closes the old one first: a page left registered would make the next
        registration at the same address fail (CUDA error 712, seen on the H200)."""
        release_mapped(self)

    def word_address(self, offset: Any) -> int:
        """Device address of a signal word (CUDA only), checked."""
        if self.signals is None:
            raise ExchangeError("only a CUDA arena has signal words")
        try:
            return self.signals.address(offset)
        except ValueError as exc:
            raise ExchangeError(str(exc)) from exc
