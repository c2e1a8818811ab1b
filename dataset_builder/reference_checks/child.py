"""The program a reference check runs in its child process: build the model, run forward, write statistics.

Two ways in, the same checks (both started by the parent modules of this package, never imported there to run):

    python -I child.py --child PROGRAM RESULT ENTRY_POINT   (a fresh interpreter per program)
    python -I child.py --fork-server                       (imports torch once, forks one child per request line)

The file runs by path in isolated mode, so it imports only the standard library at import time (torch inside
the functions) and nothing of this package; the parent modules import its constants, ``OutputStats`` (the
report it writes) and ``kill_group`` from it. The child caps the size of files it may write before it runs any
reference code, builds ``Model`` after seeding ``MODEL_SEED``, draws inputs under the two ``INPUT_SEEDS``, runs
forward three times (inputs A, inputs A again, inputs B) on cloned inputs, and writes summary statistics of
every output tensor as JSON.
"""

from __future__ import annotations

import json
import math
import os
import select
import signal
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

# Seeds: the evaluator builds the model under a hidden random seed, so a check must hold whatever the weights;
# a fixed one keeps the check reproducible. The two input draws use two other seeds.
MODEL_SEED = 42
INPUT_SEEDS = (1, 2)

# Bounds on the child: bytes of output kept for the report, bytes any file it writes may reach.
OUTPUT_TAIL_BYTES = 4000
CHILD_FILE_SIZE_LIMIT_BYTES = 64 * 1024 * 1024

CHILD_FILE = str(Path(__file__).resolve())  # what the parent runs: ``python -I CHILD_FILE ...``


@dataclass(frozen=True)
class OutputStats:
    """Summary of one output tensor, computed in the child (all floats in float64)."""

    index: int  # position in the flattened output (tuple / list / dict values, depth first)
    shape: tuple[int, ...]
    dtype: str  # e.g. "float32"
    numel: int
    finite: bool  # no NaN / Inf
    max_abs: float
    rms: float
    std: float  # population standard deviation over all elements
    repeat_max_abs_diff: float  # max |y(A) - y(A) again|; inf when the shape changed
    other_input_max_abs_diff: float  # max |y(A) - y(B)|; inf when the shape changed

    @classmethod
    def from_dict(cls, data: dict) -> OutputStats:
        return cls(**{**data, "shape": tuple(data["shape"])})


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; an empty group is no error."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def _limit_self() -> None:
    """Limits set before any reference code runs."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (CHILD_FILE_SIZE_LIMIT_BYTES, CHILD_FILE_SIZE_LIMIT_BYTES))


def _child_main(program: str, result_path: str, entry_point: str) -> int:
    _limit_self()
    report: dict = {"stage": "import torch", "finished": False, "error": None}
    Path(result_path).write_text(json.dumps(report), encoding="utf-8")
    try:
        import torch

        torch.set_num_threads(1)
    except Exception as exc:  # noqa: BLE001 - reported, not swallowed
        report["error"] = {
            "stage": "import torch",
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": "",
        }
        Path(result_path).write_text(json.dumps(report), encoding="utf-8")
        return 1
    return _check_in_this_process(program, result_path, entry_point)


def _fork_server_main() -> int:
    import torch

    torch.set_num_threads(1)
    out = sys.stdout.buffer
    out.write(b'{"ready": true}\n')
    out.flush()
    running: dict[int, str] = {}  # child pid -> its status file
    stdin = sys.stdin.buffer
    while True:
        readable, _, _ = select.select([stdin], [], [], 0.05)
        if readable:
            line = stdin.readline()  # the parent sends one line and waits for the reply: no read-ahead
            if not line:
                break  # parent closed the pipe: shut down
            request = json.loads(line)
            pid = os.fork()
            if pid == 0:
                _forked_child(request)  # never returns
            try:
                os.setpgid(pid, pid)  # also done by the child: whichever runs first wins, no race
            except (PermissionError, ProcessLookupError):
                pass
            running[pid] = request["status"]
            out.write(json.dumps({"pid": pid}).encode() + b"\n")
            out.flush()
        while running:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            kill_group(pid)  # grandchildren left in the group die with the check
            status_file = running.pop(pid)
            tmp = status_file + ".tmp"
            Path(tmp).write_text(json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}))
            os.replace(tmp, status_file)  # atomic: the parent never reads half a file
    for pid in running:
        kill_group(pid)
    return 0


def _forked_child(request: dict) -> None:
    """In a child forked by the server: isolate, run one check, exit without returning to the server loop."""
    code = 1
    try:
        os.setpgid(0, 0)
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(devnull)
        os.chdir(request["cwd"])
        _limit_self()
        code = _check_in_this_process(request["program"], request["result"], request["entry_point"])
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _check_in_this_process(program: str, result_path: str, entry_point: str) -> int:
    """Build, draw inputs, run forward three times and write the statistics; torch is already imported."""
    import importlib.util
    import traceback

    import torch

    report: dict = {"stage": "import", "finished": False, "error": None}

    def stage(name: str) -> None:
        report["stage"] = name
        Path(result_path).write_text(json.dumps(report), encoding="utf-8")  # known even if killed later

    try:
        stage("import")
        spec = importlib.util.spec_from_file_location("reference_program", program)
        module = importlib.util.module_from_spec(spec)
        sys.modules["reference_program"] = module
        spec.loader.exec_module(module)
        missing = [n for n in (entry_point, "get_inputs", "get_init_inputs") if not hasattr(module, n)]
        if missing:
            raise AttributeError(f"program does not define {missing}")

        stage("build")
        torch.manual_seed(MODEL_SEED)
        model = getattr(module, entry_point)(*module.get_init_inputs())

        stage("get_inputs")
        draws = []
        for seed in INPUT_SEEDS:
            torch.manual_seed(seed)
            draws.append(list(module.get_inputs()))
        inputs_a, inputs_b = draws

        stage("forward")
        with torch.no_grad():
            raw = model(*_clone(inputs_a))
            first = _tensors(raw)
            again = _tensors(model(*_clone(inputs_a)))
            other = _tensors(model(*_clone(inputs_b)))

        stage("statistics")
        report["output_format_error"] = _reward_format_error(raw)
        report["inputs_identical"] = _same(inputs_a, inputs_b)
        report["outputs"] = [
            asdict(_stats(i, y, again[i] if i < len(again) else None, other[i] if i < len(other) else None))
            for i, y in enumerate(first)
        ]
        report["finished"] = True
    except BaseException as exc:  # noqa: BLE001 - SystemExit / KeyboardInterrupt from user code are crashes too
        report["error"] = {
            "stage": report["stage"],
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "traceback": "".join(traceback.format_exception(exc))[-OUTPUT_TAIL_BYTES:],
        }
    Path(result_path).write_text(json.dumps(report), encoding="utf-8")
    return 0 if report["finished"] else 1


def _clone(values: list) -> list:
    import torch

    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def _reward_format_error(output) -> str | None:
    """Why the kernel reward cannot compare this output (None: it can). The reward's own rule, imported rather than
    restated: a tensor or a non-empty flat tuple / list of tensors."""
    from kernel_reward.tensors import OutputFormatError, flatten_outputs

    try:
        flatten_outputs(output)
    except OutputFormatError as exc:
        return str(exc)
    return None


def _tensors(value) -> list:
    """Tensors in an output, depth first through tuples, lists and dict values."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _same(a: list, b: list) -> bool:
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True


def _max_abs_diff(y, other) -> float:
    if other is None or other.shape != y.shape:
        return math.inf
    if y.numel() == 0:
        return 0.0
    diff = float((y.double() - other.double()).abs().max())
    return math.inf if math.isnan(diff) else diff  # NaN only where the other side is not finite: a difference


def _stats(index: int, y, again, other) -> OutputStats:
    import torch

    y = y.detach()
    dtype = str(y.dtype).removeprefix("torch.")
    y64 = y.double()
    finite = bool(torch.isfinite(y64).all())
    empty = y.numel() == 0
    max_abs = float(y64.abs().max()) if not empty and finite else 0.0
    rms = float(y64.square().mean().sqrt()) if not empty and finite else 0.0
    std = float(y64.std(correction=0)) if not empty and finite else 0.0
    return OutputStats(
        index=index,
        shape=tuple(y.shape),
        dtype=dtype,
        numel=y.numel(),
        finite=finite,
        max_abs=max_abs,
        rms=rms,
        std=std,
        repeat_max_abs_diff=_max_abs_diff(y64, again) if finite else math.nan,
        other_input_max_abs_diff=_max_abs_diff(y64, other) if finite else math.nan,
    )


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.exit(_child_main(sys.argv[2], sys.argv[3], sys.argv[4]))
    if sys.argv[1:] == ["--fork-server"]:
        sys.exit(_fork_server_main())
    sys.exit(f"usage: python -I {Path(__file__).name} --child PROGRAM RESULT ENTRY_POINT | --fork-server")
