"""Set-up of every process that evaluates: the device mode (GPU or the CPU interpreter), imports paid once,
the CUDA context and the Triton known-answer check."""

from __future__ import annotations

import enum
import importlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE_DIR = (
    Path(__file__).resolve().parent
)  # kernel_reward/: what a sandboxed child must still be able to read
SOURCE_ROOT = PACKAGE_DIR.parent  # on a fresh interpreter's PYTHONPATH, so that it imports this copy


class Mode(enum.StrEnum):
    """Where a candidate runs: its real kernels on a GPU (timed), or the Triton interpreter on the CPU (not timed)."""

    GPU = "gpu"
    INTERPRETER = "interpreter"


def mode_of(device: str | None) -> Mode:
    """The mode for ``device`` ("cpu", "cuda", "cuda:N"; None: a GPU when torch sees one, else the interpreter).
    Decided once per evaluation and passed on; nothing downstream compares device strings again."""
    if device is not None:
        return Mode.INTERPRETER if device == "cpu" else Mode.GPU
    import torch

    return Mode.GPU if torch.cuda.is_available() else Mode.INTERPRETER


@dataclass(frozen=True)
class WorkerInfo:
    device: str  # "cpu" or "cuda:N"
    device_name: str  # "cpu" or the CUDA device name
    mode: Mode
    warmup_seconds: dict[str, float] = field(default_factory=dict, compare=False)  # stage -> seconds


# Every module an evaluation imports after warm-up, on both sides of the process boundary: the zygote imports
# them before it forks, so judge and runner children inherit them. Named as strings so that this module, which
# every process imports, depends on none of them.
PREIMPORTED_MODULES = (
    "kernel_reward.common.loading",
    "kernel_reward.common.tensors",
    "kernel_reward.ipc.exchange",
    "kernel_reward.judge.compare",
    "kernel_reward.judge.correctness",
    "kernel_reward.judge.remote",
    "kernel_reward.judge.shapes",
    "kernel_reward.judge.verdict",
    "kernel_reward.runner.profiling",
    "kernel_reward.runner.runner",
    "kernel_reward.timing.batch_clock",
    "kernel_reward.timing.statistics",
    "torch._dynamo.eval_frame",  # the runner severs it (runner.compile_guard); the judge may compile the baseline
)


def preimport() -> None:
    """Import the pipeline's pure-Python modules without touching any device: the zygote calls this before it
    forks, so children inherit the imports instead of each paying them during warm-up."""
    import torch.profiler  # noqa: F401  (kineto's Python side; CUPTI itself starts only with a session)

    for name in PREIMPORTED_MODULES:
        importlib.import_module(name)
    shapes = importlib.import_module("kernel_reward.judge.shapes")
    shapes.warm_meta_device()  # the resized-shape check sizes its inputs on the meta device


_prepared: dict[tuple[str, bool], WorkerInfo] = {}


def ensure_interpreter_env() -> None:
    """Set TRITON_INTERPRET=1, or explain why it is too late (triton already imported in GPU mode)."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    if "triton" in sys.modules:
        raise RuntimeError(
            "CPU evaluation needs the Triton interpreter, but triton was imported before TRITON_INTERPRET=1 was "
            "set. Start the worker process with TRITON_INTERPRET=1 in its environment."
        )
    os.environ["TRITON_INTERPRET"] = "1"


def prepare_worker(device: str | None = None, *, triton_check: bool = True) -> WorkerInfo:
    """Import torch/triton, create the CUDA context, run the known-answer kernel. Idempotent per device.

    ``triton_check=False`` for a judge: it runs no Triton code (its runner proves Triton works in its own
    warm-up), so it skips the check's compile and launch (about 0.6 s of CPU per evaluation on the H200)."""
    key = (device or "auto", triton_check)
    if key in _prepared:
        return _prepared[key]
    mode = mode_of(device)
    if mode is Mode.INTERPRETER:
        ensure_interpreter_env()
    stages: dict[str, float] = {}
    clock = time.perf_counter()

    def stage(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages[name] = round(now - clock, 4)
        clock = now

    import torch

    if mode is Mode.INTERPRETER:
        info = WorkerInfo("cpu", "cpu", Mode.INTERPRETER, stages)
    else:
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {device!r} asked for CUDA, but torch sees no CUDA device")
        if os.environ.get("TRITON_INTERPRET") == "1":
            raise RuntimeError("TRITON_INTERPRET=1 is set in a GPU worker; unset it to time real kernels")
        torch_device = torch.device(device or "cuda")
        index = torch_device.index if torch_device.index is not None else torch.cuda.current_device()
        torch.cuda.set_device(index)
        torch.empty(
            1, device=f"cuda:{index}"
        )  # creates the CUDA context now, not inside a candidate's budget
        info = WorkerInfo(f"cuda:{index}", torch.cuda.get_device_name(index), Mode.GPU, stages)
    stage("cuda_context")
    from kernel_reward.runner.selftest import known_answer_check

    if info.mode is Mode.INTERPRETER:
        from kernel_reward.runner.interpreter_order import install_interpreter_order
        from kernel_reward.runner.interpreter_shims import install_interpreter_shims

        install_interpreter_shims()  # autotuners take their first config: nothing can be timed here
        install_interpreter_order()  # programs out of order, stores seen late: as a GPU may run them
    if triton_check:
        known_answer_check(torch.device(info.device))
        stage("known_answer")
    # Import the pipeline now rather than inside the first candidate's wall clock (a no-op after preimport()).
    preimport()
    stage("imports")
    _prepared[key] = info
    return info


def apply_tf32_policy(allow_tf32: bool) -> None:
    """The TF32 policy of this process (``EvalOptions.allow_tf32``). By default fp32 runs in full fp32 (no TF32
    in matmul or convolutions): the reference in the judge and the candidate's own torch calls in the runner alike
    (cuDNN's default would otherwise be TF32 convolutions)."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = allow_tf32
    torch.backends.cudnn.allow_tf32 = allow_tf32
    torch.set_float32_matmul_precision("high" if allow_tf32 else "highest")
