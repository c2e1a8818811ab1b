"""Tensor helpers both the judge and the runner use: inputs, seeding, clones, flattened outputs, buffer
snapshots, aliasing, device synchronisation."""

from __future__ import annotations

import copy
import types
from typing import Any

import torch


class OutputFormatError(Exception):
    """The forward output is not a tensor / tuple of tensors the harness can compare."""


def make_inputs(reference_module: types.ModuleType, seed: int, device: torch.device) -> list[Any]:
    """``get_inputs()`` drawn under ``seed`` and placed on ``device``.

    Factory calls without an explicit device draw directly on ``device`` (``torch.device`` as a context): at
    full task sizes, drawing GiB-sized inputs on the host and copying them over dominated the correctness phase
    on the GPU machine. A ``get_inputs`` that cannot run that way (it calls ``.numpy()``, say) is drawn on the
    host, as the task wrote it, and moved. Either way both models get the same tensors.
    """
    seed_generators(seed)
    try:
        with torch.device(device):
            raw = list(reference_module.get_inputs())
    except Exception:
        if torch.device(device).type == "cpu":
            raise
        seed_generators(seed)
        raw = list(reference_module.get_inputs())
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]


def seed_generators(seed: int) -> None:
    """What ``torch.manual_seed`` does for the host and CUDA generators, without the rest: on a machine with no
    XPU or MTIA it queues a lazy seeding call for each, with a formatted stack trace, every time (0.15 ms a draw,
    about 1.2 ms of each timed batch's staging on the H200, and a queue that only grows)."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


# The generator state every compared forward starts from, on both sides (the reference in the judge, the candidate in
# the runner): a reference that draws random numbers (dropout in training mode, KernelBench's default) is matched by
# a candidate that draws the same way, as KernelBench seeds before each model call. Public on purpose: it only
# makes the forward's own randomness reproducible; the inputs' seeds stay hidden (make_inputs reseeds).
FORWARD_SEED = 20261205


def seed_forward() -> None:
    """Start a forward from ``FORWARD_SEED`` (host and CUDA generators; host-side only, nothing queued)."""
    seed_generators(FORWARD_SEED)


def clone_args(args: list[Any]) -> list[Any]:
    """Fresh storage for every tensor argument, so no call sees (or keeps a pointer to) another call's buffers."""
    return [x.detach().clone() if isinstance(x, torch.Tensor) else copy.deepcopy(x) for x in args]


def flatten_outputs(output: Any) -> list[torch.Tensor]:
    """A forward's output as a list of tensors; raise OutputFormatError for anything else."""
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, tuple | list) and output and all(isinstance(o, torch.Tensor) for o in output):
        return list(output)
    raise OutputFormatError(
        f"forward returned {type(output).__name__}, expected a tensor or a tuple of tensors"
    )


def non_plain_tensors(outputs: list[torch.Tensor]) -> list[str]:
    """Type names of outputs that are tensor subclasses (lazy tensors, wrappers) rather than torch.Tensor."""
    return [
        type(o).__name__ for o in outputs if type(o) is not torch.Tensor and type(o) is not torch.nn.Parameter
    ]


def only_tensors(args: list[Any]) -> list[torch.Tensor]:
    """The tensor arguments of a call, in order (the rest: ints, floats, None)."""
    return [arg for arg in args if isinstance(arg, torch.Tensor)]


def buffer_snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of ``model``'s buffers (BatchNorm's running statistics and counters, say): the state its training-mode
    forwards change and its ``.eval()`` forward reads."""
    return {name: buffer.detach().clone() for name, buffer in model.named_buffers()}


def restore_buffers(model: torch.nn.Module, snapshot: dict[str, torch.Tensor]) -> int:
    """Put ``snapshot``'s values back into ``model``'s buffers of the same name and shape; how many were restored."""
    restored = 0
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            saved = snapshot.get(name)
            if saved is not None and saved.shape == buffer.shape:
                buffer.copy_(saved)
                restored += 1
    return restored


def storage_ptrs(tensors: list[Any]) -> set[int]:
    return {t.untyped_storage().data_ptr() for t in tensors if isinstance(t, torch.Tensor) and t.numel() > 0}


def aliases(outputs: list[torch.Tensor], args: list[Any]) -> bool:
    """True when an output shares storage with an input argument (returning an input or a view of one)."""
    return bool(storage_ptrs(outputs) & storage_ptrs(args))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class CallError(Exception):
    """A forward that could not produce outputs for the judge; ``kind`` says how (raised / exit / format)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def structured_outputs(output: Any) -> tuple[str, list[torch.Tensor]]:
    """(structure, tensors): "tensor" for one tensor, "tuple:N" / "list:N" for a sequence of N tensors."""
    try:
        outputs = flatten_outputs(output)
    except OutputFormatError as exc:
        raise CallError("format", str(exc)) from exc
    if isinstance(output, torch.Tensor):
        return "tensor", outputs
    return f"{'list' if isinstance(output, list) else 'tuple'}:{len(outputs)}", outputs
