"""The Triton interpreter made to run a launch the way a GPU may: programs out of order, stores seen late.

The bare interpreter runs a grid's programs one after another in index order, each seeing every store of the
ones before, so a kernel that is only right in that order (a split reduction that reads, adds to and writes back
one total without atomics; a scan whose blocks read their predecessor's output with nothing to wait on) passes
on the CPU and fails on a GPU. Installed in interpreter mode (``runtime.prepare_worker``) before any candidate
code, this shim changes two things:

* **Order**: a launch's programs run in a random order (``set_grid_dim`` draws a permutation).
* **Visibility**: a program's plain stores are held back and reach memory only at its next atomic operation
  (Triton's atomics order memory) or at the end of the launch; the program reads its own held stores, the others
  read memory as it was. Atomics act on memory at once, so kernels that synchronise through them keep their
  result. The shim runs inside the candidate's process: a CPU verdict is evidence, not proof (docs/security.md).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_installed = False


@dataclass
class _HeldStore:
    pointers: np.ndarray  # flat uint64 addresses, masked-off lanes removed
    values: np.ndarray  # flat, same length


@dataclass
class _Program:
    stores: list[_HeldStore] = field(default_factory=list)
    low: int = 2**64  # the address range its held stores touch, to skip most loads at once
    high: int = -1


@dataclass
class _Launch:
    order: list[tuple[int, int, int]]
    next_index: int = 0
    programs: list[_Program] = field(default_factory=list)

    @property
    def current(self) -> _Program | None:
        return self.programs[-1] if self.programs else None


_launch: _Launch | None = None


def install_interpreter_order(rng: random.Random | None = None) -> None:
    """Idempotent. Call only in a process running the Triton interpreter, before candidates are imported."""
    global _installed
    if _installed:
        return
    from triton.runtime import interpreter

    builder_class = interpreter.InterpreterBuilder
    executor_class = interpreter.GridExecutor
    for owner, name in (
        (builder_class, "set_grid_dim"),
        (builder_class, "set_grid_idx"),
        (builder_class, "create_masked_store"),
        (builder_class, "create_masked_load"),
        (builder_class, "create_atomic_cas"),
        (builder_class, "create_atomic_rmw"),
        (executor_class, "_restore_args_dev"),
    ):
        if not callable(getattr(owner, name, None)):
            raise RuntimeError(
                f"triton {interpreter.__name__}.{owner.__name__}.{name} is missing: cannot install"
            )
    shuffle = (rng or random.Random()).shuffle
    store = interpreter._interpreter.store
    original = {
        name: getattr(builder_class, name)
        for name in (
            "set_grid_dim",
            "set_grid_idx",
            "create_masked_load",
            "create_atomic_cas",
            "create_atomic_rmw",
        )
    }
    restore_args = executor_class._restore_args_dev

    def set_grid_dim(self: Any, nx: int, ny: int, nz: int) -> None:
        global _launch
        original["set_grid_dim"](self, nx, ny, nz)
        order = [(x, y, z) for x in range(nx) for y in range(ny) for z in range(nz)]
        shuffle(order)
        _launch = _Launch(order)

    def set_grid_idx(self: Any, x: int, y: int, z: int) -> None:
        launch = _launch
        if launch is None or launch.next_index >= len(launch.order):
            original["set_grid_idx"](self, x, y, z)  # a program outside a launch the shim saw begin
            return
        launch.programs.append(_Program())
        original["set_grid_idx"](self, *launch.order[launch.next_index])
        launch.next_index += 1

    def create_masked_store(
        self: Any, ptrs: Any, value: Any, mask: Any, cache_modifier: Any, policy: Any
    ) -> None:
        program = _launch.current if _launch is not None else None
        if program is None:
            store(ptrs.data, value.data, mask.data)
            return
        keep = np.broadcast_to(mask.data, ptrs.data.shape).ravel()
        pointers = np.array(ptrs.data, dtype=np.uint64).ravel()[keep]
        values = np.array(np.broadcast_to(value.data, ptrs.data.shape)).ravel()[keep]
        if pointers.size:
            program.stores.append(_HeldStore(pointers, values))
            program.low = min(program.low, int(pointers.min()))
            program.high = max(program.high, int(pointers.max()))

    def create_masked_load(self: Any, ptrs: Any, mask: Any, other: Any, *args: Any) -> Any:
        loaded = original["create_masked_load"](self, ptrs, mask, other, *args)
        program = _launch.current if _launch is not None else None
        if program is not None and program.stores:
            _read_own_stores(program, ptrs.data, mask.data, loaded.data)
        return loaded

    def create_atomic_cas(self: Any, *args: Any) -> Any:
        _flush_current(store)
        return original["create_atomic_cas"](self, *args)

    def create_atomic_rmw(self: Any, *args: Any) -> Any:
        _flush_current(store)
        return original["create_atomic_rmw"](self, *args)

    def restore_args_dev(self: Any, *args: Any) -> Any:
        global _launch
        launch, _launch = _launch, None
        if launch is not None:
            for program in launch.programs:
                _flush(program, store)
        return restore_args(self, *args)

    builder_class.set_grid_dim = set_grid_dim
    builder_class.set_grid_idx = set_grid_idx
    builder_class.create_masked_store = create_masked_store
    builder_class.create_masked_load = create_masked_load
    builder_class.create_atomic_cas = create_atomic_cas
    builder_class.create_atomic_rmw = create_atomic_rmw
    executor_class._restore_args_dev = restore_args_dev
    _installed = True


def _flush(program: _Program, store: Any) -> None:
    """Write ``program``'s held stores to memory, in the order it made them."""
    for held in program.stores:
        store(held.pointers, held.values, np.ones(held.pointers.shape, dtype=bool))
    program.stores.clear()
    program.low, program.high = 2**64, -1


def _flush_current(store: Any) -> None:
    program = _launch.current if _launch is not None else None
    if program is not None:
        _flush(program, store)


def _read_own_stores(program: _Program, pointers: np.ndarray, mask: np.ndarray, loaded: np.ndarray) -> None:
    """Overwrite, in place, the lanes of ``loaded`` whose address the program itself stored to (held back)."""
    flat_pointers = np.asarray(pointers, dtype=np.uint64).ravel()
    if (
        not flat_pointers.size
        or int(flat_pointers.max()) < program.low
        or int(flat_pointers.min()) > program.high
    ):
        return
    active = np.broadcast_to(mask, pointers.shape).ravel()
    flat_loaded = loaded.reshape(-1)
    for held in program.stores:  # later stores overwrite earlier ones
        if held.values.dtype.itemsize != flat_loaded.dtype.itemsize:
            continue  # a store of another width at the same address: left as memory holds it
        order = np.argsort(held.pointers, kind="stable")
        sorted_pointers = held.pointers[order]
        at = np.clip(np.searchsorted(sorted_pointers, flat_pointers, side="right") - 1, 0, None)
        hit = active & (sorted_pointers[at] == flat_pointers)
        if hit.any():
            flat_loaded[hit] = held.values[order][at[hit]].view(flat_loaded.dtype)
