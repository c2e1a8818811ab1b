"""Make honest Triton code that relies on GPU-only runtime services run under the CPU interpreter.

Installed by ``runtime.prepare_worker`` in interpreter mode only, before any candidate is imported; the GPU path is
untouched. Each shim makes the interpreter do what the GPU compiler does, so CPU and GPU verdicts agree:

* ``@triton.autotune`` benchmarks its configs with the active driver's benchmarker, which ``TRITON_INTERPRET=1``
  lacks ("0 active drivers"). Nothing can be timed here anyway, so every config costs the same and the autotuner
  takes the FIRST one (correctness does not depend on which config is chosen).
* A plain ``float`` kernel argument is an fp32 scalar tensor on the GPU (``eps.to(tl.float32)`` is common in
  production kernels); the shim converts it the same way, so arithmetic promotes as it does there.
* The generic ``triton.language.extra.libdevice`` functions are stubs the GPU compiler replaces (the bare
  interpreter gets ``None``), and the CUDA module's need extern calls: both modules get numpy versions of the
  floating-point math functions (or ``tl.math``'s interpreted ones), and every other function raises an error
  naming the interpreter gap.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from kernel_reward.common.interpreter_gaps import LIBDEVICE_VIA_NUMPY, LIBDEVICE_VIA_TL_MATH

_installed = False

LIBDEVICE_MODULES = ("triton.language.extra.libdevice", "triton.language.extra.cuda.libdevice")


def install_interpreter_shims() -> None:
    """Idempotent. Call only in a process running the Triton interpreter, before candidates are imported."""
    global _installed
    if _installed:
        return
    _shim_autotuner()
    _shim_float_arguments()
    for module in LIBDEVICE_MODULES:
        _shim_libdevice(importlib.import_module(module))
    _installed = True


def _shim_autotuner() -> None:
    from triton.runtime.autotuner import Autotuner

    def _bench_without_timing(self: Any, *args: Any, config: Any, **kwargs: Any) -> list[float]:
        return [0.0, 0.0, 0.0]  # (median, p20, p80), equal for every config: min() keeps the first

    Autotuner._bench = _bench_without_timing


def _shim_float_arguments() -> None:
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter._implicit_cvt

    def implicit_cvt(arg: Any) -> Any:
        if isinstance(arg, float):  # the GPU's signature for a Python float argument is fp32
            return tl.tensor(
                interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32
            )
        return original(arg)

    interpreter._implicit_cvt = implicit_cvt


def _shim_libdevice(module: Any) -> None:
    import numpy as np
    import triton.language as tl

    for name, _function in inspect.getmembers(module, callable):
        if name.startswith("_") or inspect.ismodule(_function) or inspect.isclass(_function):
            continue
        if name in LIBDEVICE_VIA_TL_MATH:
            replacement = _via_tl_math(tl, LIBDEVICE_VIA_TL_MATH[name])
        elif name in LIBDEVICE_VIA_NUMPY:
            replacement = _via_numpy(name, getattr(np, LIBDEVICE_VIA_NUMPY[name]))
        else:
            replacement = _unsupported(f"{module.__name__}.{name}")
        setattr(module, name, replacement)


def _via_tl_math(tl: Any, name: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("_semantic", None)
        kwargs.pop("_builder", None)
        return getattr(tl.math, name)(*args, **kwargs)  # looked up per call: the interpreter patches tl.math

    return run


def _via_numpy(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        import numpy as np
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        tensors = [a for a in args if isinstance(a, tl.tensor)]
        if not tensors:
            raise TypeError(
                f"libdevice.{name} under the Triton interpreter: expected a tensor argument, got {args!r}"
            )
        like = max(tensors, key=lambda t: len(t.shape))
        dtype = like.handle.data.dtype
        data = [a.handle.data if isinstance(a, tl.tensor) else np.asarray(a, dtype=dtype) for a in args]
        out = np.asarray(function(*data)).astype(dtype, copy=False)
        if out.shape != like.handle.data.shape:
            raise TypeError(
                f"libdevice.{name} under the Triton interpreter: arguments of shapes "
                f"{[tuple(a.shape) for a in tensors]} do not broadcast to one tensor's shape"
            )
        return tl.tensor(TensorHandle(out, like.handle.dtype.scalar), like.type)

    return run


def _unsupported(qualified: str) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"{qualified} has no implementation under the Triton interpreter (an interpreter gap, not a fault of "
            f"the kernel: it runs on the GPU)"
        )

    return run
