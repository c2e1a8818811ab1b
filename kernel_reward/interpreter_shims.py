"""Make honest Triton code that relies on GPU-only runtime services run under the CPU interpreter.

``@triton.autotune`` benchmarks its configs with the active driver's benchmarker, which does not exist under
``TRITON_INTERPRET=1`` ("0 active drivers"), so every autotuned candidate -- a very common, honest pattern --
would fail on CPU. Under the interpreter nothing can be timed anyway, so the autotuner is told every config
costs the same and takes the FIRST config (correctness does not depend on which config is chosen, timing is
not measured). Installed by ``worker.prepare_worker`` in interpreter mode only; the GPU path is untouched.
"""

from __future__ import annotations

from typing import Any

_installed = False


def install_interpreter_shims() -> None:
    """Idempotent. Call only in a process running the Triton interpreter."""
    global _installed
    if _installed:
        return
    from triton.runtime.autotuner import Autotuner

    def _bench_without_timing(self: Any, *args: Any, config: Any, **kwargs: Any) -> list[float]:
        return [0.0, 0.0, 0.0]  # (median, p20, p80), equal for every config: min() keeps the first

    Autotuner._bench = _bench_without_timing
    _installed = True
