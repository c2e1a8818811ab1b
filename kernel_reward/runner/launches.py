"""Which Triton kernels a forward pass really launches, and whether the candidate's kernels matter at all.

One mechanism serves the GPU and the interpreter: every Triton launch goes through ``run(..., grid=...,
warmup=...)`` of the kernel object (``JITFunction`` on the GPU, ``InterpretedFunction`` under
``TRITON_INTERPRET=1``; autotuners and heuristics end there too). While a ``LaunchMonitor`` is active that
method is wrapped at class level, so every launch is recorded with the Python module that defined the kernel.
A launch counts as the candidate's own when the kernel's ``fn.__module__`` is the candidate's unique module
name (static checks forbid the monkey-patching that could fake this). Only launches made by the thread that
runs the forward are recorded as the forward's: a candidate's own thread can keep launching while a forward
runs, and its kernels would otherwise pad the launch list and coverage. Those go to ``elsewhere``.

Ablation (decoy detection): with ``ablate=True`` the candidate's launches do not run; instead every tensor
argument that is not a forward input or a model parameter (i.e. what the kernel could write: outputs and
intermediates) is filled with NaN. If the forward output is still correct, the candidate's kernels did not
contribute to it: a decoy (kernel on dummy data, result discarded, answer from torch).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass(frozen=True)
class Launch:
    name: str
    module: str


@dataclass
class LaunchMonitor:
    """Records launches while ``active()``; optionally replaces the candidate's launches by NaN writes."""

    candidate_module: str
    ablate: bool = False
    protected_storages: set[int] = field(default_factory=set)  # data_ptrs of inputs / params never poisoned
    launches: list[Launch] = field(default_factory=list)
    # With time_launches, every (non-warm-up) launch of the forward's thread is bracketed by CUDA events on the
    # current stream: (launch, start event, end event) in launch order (profiling.event_coverage).
    time_launches: bool = False
    timed: list[tuple[Launch, Any, Any]] = field(default_factory=list)
    # Launches made by other threads while active (ablated all the same, never timed or counted as the forward's).
    elsewhere: list[Launch] = field(default_factory=list)
    forward_thread: int | None = None

    @property
    def candidate_launches(self) -> list[Launch]:
        return [launch for launch in self.launches if launch.module == self.candidate_module]

    def protect(self, tensors: Iterable[Any]) -> None:
        for tensor in tensors:
            if isinstance(tensor, torch.Tensor):
                self.protected_storages.add(tensor.untyped_storage().data_ptr())

    @contextlib.contextmanager
    def active(self) -> Iterator[LaunchMonitor]:
        patched = []
        self.forward_thread = threading.get_ident()
        for cls in _kernel_classes():
            original = cls.__dict__["run"]
            cls.run = _wrap_run(original, self)
            patched.append((cls, original))
        try:
            yield self
        finally:
            for cls, original in patched:
                cls.run = original

    def _poison(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        for value in (*args, *kwargs.values()):
            if (
                not isinstance(value, torch.Tensor)
                or value.untyped_storage().data_ptr() in self.protected_storages
            ):
                continue
            with torch.no_grad():
                if value.is_floating_point():
                    value.fill_(float("nan"))
                elif value.dtype != torch.bool:
                    value.fill_(-12345)


_lock = threading.Lock()


def _wrap_run(original: Any, monitor: LaunchMonitor) -> Any:
    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        fn = getattr(self, "fn", None)
        module = getattr(fn, "__module__", "") or ""
        name = getattr(fn, "__name__", type(self).__name__)
        if not warmup:
            launch = Launch(name, module)
            on_forward_thread = threading.get_ident() == monitor.forward_thread
            with _lock:
                (monitor.launches if on_forward_thread else monitor.elsewhere).append(launch)
            if monitor.ablate and module == monitor.candidate_module:
                monitor._poison(args, kwargs)
                return None
            if monitor.time_launches and on_forward_thread:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                output = original(self, *args, grid=grid, warmup=warmup, **kwargs)
                end.record()
                with _lock:
                    monitor.timed.append((launch, start, end))
                return output
        return original(self, *args, grid=grid, warmup=warmup, **kwargs)

    run.__wrapped__ = original  # type: ignore[attr-defined]
    return run


def _kernel_classes() -> list[type]:
    """The kernel classes whose ``run`` is the launch path in this process (imported lazily: triton is heavy)."""
    classes: list[type] = []
    from triton.runtime.jit import JITFunction

    classes.append(JITFunction)
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except ImportError:  # pragma: no cover - very old Triton
        pass
    else:
        classes.append(InterpretedFunction)
    return [cls for cls in classes if "run" in cls.__dict__]
