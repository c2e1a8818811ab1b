"""Where the judge puts a call's tensors in the exchange arena: checked and timed calls the same way.

Every run message, a one-call check or a K-call batch (timed, or the checked batches of ``correctness``), is laid
out in one grid of K call slots as a timed batch lays out its calls: the K calls' inputs one after another, then
their outputs (``lay_out``). Each message draws afresh the grid's base among the aligned offsets where it fits
(``draw_base``) and which slot each of its calls takes (``draw_order``; a one-call message takes one slot drawn
at random). So neither where a call's tensors lie nor what lies around them tells the runner whether the judge's
clock is running (docs/security.md#known-gaps). The draws come from ``secrets``: nothing the runner has seen
predicts them. The messages themselves carry the same fields, checked or timed (``call_entry``, ``run_message``).
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from typing import Any

import torch

from kernel_reward.ipc import exchange

_RANDOM = secrets.SystemRandom()
CALLS_WITHOUT_CLOCK = 2  # K of the checked K-call messages where nothing is timed (the CPU's interpreter)


@dataclass(frozen=True)
class Grid:
    """K call slots, offsets counted from the grid's start: each slot's encoded arguments and output places, where
    the outputs begin (``inputs_end``) and the bytes the grid spans (``size``, aligned)."""

    args: tuple[list[Any], ...]
    outs: tuple[list[exchange.TensorRef], ...]
    inputs_end: int
    size: int

    @property
    def calls(self) -> int:
        return len(self.args)

    def holds(self, inputs: list[Any]) -> bool:
        """Whether ``inputs``' tensors have the shapes, dtypes and arena strides of a slot's."""
        refs = input_refs(self.args[0])
        tensors = _tensors(inputs)
        return len(refs) == len(tensors) and all(
            ref.shape == tuple(t.shape)
            and ref.dtype == str(t.dtype).removeprefix("torch.")
            and ref.stride == exchange.placement_stride(t)
            for ref, t in zip(refs, tensors, strict=True)
        )


def lay_out(sample: list[Any], spec: Any, calls: int, capacity: int) -> Grid:
    """The grid of ``calls`` slots for calls shaped like ``sample`` returning ``spec`` (``remote.OutputSpec``);
    MemoryError when it does not fit ``capacity`` bytes."""
    layout = exchange.Layout(capacity)

    def reserve(tensor: torch.Tensor) -> exchange.TensorRef:
        return layout.place(tuple(tensor.shape), tensor.dtype, exchange.placement_stride(tensor))

    args = tuple(exchange.encode_args(sample, reserve) for _ in range(calls))
    inputs_end = layout.used
    outs = tuple(
        [layout.place(shape, dtype) for shape, dtype in zip(spec.shapes, spec.dtypes, strict=True)]
        for _ in range(calls)
    )
    return Grid(args, outs, inputs_end, layout.used)


def draw_base(capacity: int, size: int) -> int:
    """A base drawn uniformly among the aligned offsets where ``size`` bytes fit in ``capacity``."""
    positions = max((capacity - size) // exchange.ALIGN + 1, 1)
    return secrets.randbelow(positions) * exchange.ALIGN


def draw_order(calls: int) -> list[int]:
    """The slot of each of a K-call message's calls, in message order: a permutation drawn afresh."""
    return _RANDOM.sample(range(calls), calls)


def draw_slot(calls: int) -> int:
    return secrets.randbelow(calls)


def shifted_ref(ref: exchange.TensorRef, delta: int) -> exchange.TensorRef:
    return dataclasses.replace(ref, offset=ref.offset + delta)


def shifted_args(items: list[Any], delta: int) -> list[Any]:
    """Pure: an encoded argument list (``exchange.encode_args``) with every tensor moved ``delta`` bytes on."""
    return [_shifted(item, delta) for item in items]


def _shifted(item: Any, delta: int) -> Any:
    if "tensor" in item:
        ref = exchange.TensorRef.from_json(item["tensor"])
        return {**item, "tensor": shifted_ref(ref, delta).to_json()}
    for container in ("list", "tuple"):
        if container in item:
            return {container: [_shifted(x, delta) for x in item[container]]}
    return item


def input_refs(items: list[Any]) -> list[exchange.TensorRef]:
    """Pure: the tensor references of an encoded argument list, in argument order."""
    refs: list[exchange.TensorRef] = []
    for item in items:
        if "tensor" in item:
            refs.append(exchange.TensorRef.from_json(item["tensor"]))
        for container in ("list", "tuple"):
            if container in item:
                refs.extend(input_refs(item[container]))
    return refs


def _tensors(values: list[Any]) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    for value in values:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, list | tuple):
            found.extend(_tensors(list(value)))
    return found


def call_entry(
    args: list[Any],
    outs: list[exchange.TensorRef],
    structure: str,
    *,
    mode: str = "no_grad",
    ablate: bool = False,
    monitor: bool = True,
    train: bool = True,
) -> dict[str, Any]:
    """One call of a run message: the same fields, checked or timed (``runner.Runner._run_calls`` reads them)."""
    return {
        "args": args,
        "out": [ref.to_json() for ref in outs],
        "mode": mode,
        "ablate": ablate,
        "monitor": monitor,
        "structure": structure,
        "train": train,
    }


def run_message(model_id: int, calls: list[dict[str, Any]], *, dry: bool = False) -> dict[str, Any]:
    """A run message: the same fields, checked or timed (a timed batch on a GPU adds its ``gate``)."""
    return {"type": "run", "model": model_id, "calls": calls, "dry": dry}
