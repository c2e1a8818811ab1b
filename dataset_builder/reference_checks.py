"""Run one PyTorch reference program on CPU in a child process and report why it would make a bad task.

A task is unusable when the evaluator could not judge candidates against it (it crashes or hangs), when a
candidate could pass without computing anything (its output does not depend on the input, or is so close to
zero / to a constant that a fill kernel passes the evaluator's tolerance), or when the reference disagrees with
itself (a forward pass with randomness or hidden state, e.g. dropout in training mode). FACTS 5 lists such
tasks in KernelBench itself.

How a check runs:
- the parent writes the program to a fresh temporary folder and starts a child in its own process group,
  stdin ``/dev/null``, stdout+stderr to a file of which only the tail is kept; the parent owns the wall clock
  and a check always ends with a kill of the child's whole group. ``check_reference`` starts a fresh
  interpreter (``python -I <this file> --child ...``, ~2 s of torch import); ``check_references`` by default
  asks a warm fork server (``--fork-server``: torch imported once) to fork the child instead (~0.1 s);
- the child caps the size of files it may write before it runs any reference code, builds ``Model`` after
  seeding 42 (as the evaluator does), draws inputs under two seeds, runs forward three times (inputs A, inputs
  A again, inputs B) on cloned inputs, and writes summary statistics of every output tensor as JSON;
- the parent turns those statistics into problems with the pure function ``classify_outputs`` and the
  thresholds below.

This module imports only the standard library at import time (torch is imported in the child), so it can be
used without ``kernel_reward`` or ``datasets``.
"""

from __future__ import annotations

import enum
import json
import logging
import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "EVAL_TOLERANCE",
    "INPUT_DEPENDENCE_REL",
    "NEAR_CONSTANT_REL_STD",
    "NONDETERMINISM_REL",
    "OutputStats",
    "ProblemKind",
    "ReferenceCheck",
    "check_reference",
    "check_references",
    "classify_outputs",
    "tolerance_for",
]

logger = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------------------
# Thresholds (pure constants; the reasoning is the evaluator's correctness test, allclose with atol = rtol = tol)

# The evaluator's default tolerances per output dtype (kernel_reward, issue 3: fp32 1e-4, fp16/bf16 1e-2).
# Integer and boolean outputs are compared exactly (tolerance 0).
EVAL_TOLERANCE: dict[str, float] = {
    "float64": 1e-4,
    "float32": 1e-4,
    "float16": 1e-2,
    "bfloat16": 1e-2,
}

# near_constant: an output whose standard deviation is below this fraction of its RMS is one value almost
# everywhere, so a kernel that fills the output with a single constant passes for (nearly) every element.
NEAR_CONSTANT_REL_STD = 1e-3

# input_independent: outputs for two independent random inputs that differ by no more than
# tol + INPUT_DEPENDENCE_REL * max|y| mean a hard-coded (cached) output would pass: 1e-3 is ten times the fp32
# rtol, so "barely changes" is caught too, not only "bit-identical".
INPUT_DEPENDENCE_REL = 1e-3

# nondeterministic: two forward passes on identical inputs may differ by float reassociation noise at most
# (~1e-7 relative in fp32); CPU kernels are deterministic, so anything above 1e-6 relative means randomness
# (dropout in training mode, torch.rand in forward) or hidden state that changes between calls.
NONDETERMINISM_REL = 1e-6

# Seeds: the evaluator builds models after seeding 42; the two input draws use two other seeds.
MODEL_SEED = 42
INPUT_SEEDS = (1, 2)

# Bounds on the child: bytes of output kept for the report, bytes any file it writes may reach.
OUTPUT_TAIL_BYTES = 4000
CHILD_FILE_SIZE_LIMIT_BYTES = 64 * 1024 * 1024


def tolerance_for(dtype: str) -> float:
    """Evaluator tolerance for an output dtype name such as ``"float32"`` (0 for integer / bool outputs)."""
    return EVAL_TOLERANCE.get(dtype.removeprefix("torch."), 0.0)


# ---------------------------------------------------------------------------------------------------------
# Typed results


class ProblemKind(enum.StrEnum):
    """Why a reference program cannot serve as a task."""

    CRASH = "crash"  # import, build, get_inputs or forward raised, or the process died
    TIMEOUT = "timeout"  # did not finish within the wall-clock budget
    NONDETERMINISTIC = "nondeterministic"  # identical inputs, different outputs
    INPUT_INDEPENDENT = "input_independent"  # (almost) the same output for two different random inputs
    NEAR_CONSTANT = "near_constant"  # all |y| within tolerance of 0, or one value almost everywhere
    NO_TENSOR_OUTPUT = "no_tensor_output"  # forward returned no tensor at all
    NON_FINITE = "non_finite"  # NaN or Inf in the output: allclose can never pass


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


@dataclass
class ReferenceCheck:
    """Verdict on one reference program. ``ok`` only when it ran to the end with no problem (fail closed)."""

    ok: bool = False
    problems: list[ProblemKind] = field(default_factory=list)
    details: str = ""
    seconds: float = 0.0
    outputs: list[OutputStats] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["problems"] = [p.value for p in self.problems]
        return data


# ---------------------------------------------------------------------------------------------------------
# Pure classification


def classify_outputs(
    outputs: Sequence[OutputStats], *, inputs_identical: bool = False
) -> list[tuple[ProblemKind, str]]:
    """Problems shown by the output statistics of one reference, each with a one-line reason.

    Args:
        outputs: one entry per output tensor (empty when forward returned no tensor).
        inputs_identical: ``get_inputs()`` returned the same tensors under both seeds (mentioned in the reason).

    Returns:
        ``(kind, reason)`` pairs, at most one per kind, in a fixed order; empty when the outputs look usable.
    """
    if not outputs:
        return [(ProblemKind.NO_TENSOR_OUTPUT, "forward returned no tensor")]
    found: dict[ProblemKind, str] = {}

    def add(kind: ProblemKind, reason: str) -> None:
        found.setdefault(kind, reason)

    for out in outputs:
        tol = tolerance_for(out.dtype)
        name = f"output {out.index} {out.dtype}{list(out.shape)}"
        if not out.finite:
            add(ProblemKind.NON_FINITE, f"{name} holds NaN or Inf")
            continue  # differences and spreads of non-finite values mean nothing
        if out.repeat_max_abs_diff > NONDETERMINISM_REL * out.max_abs:
            add(
                ProblemKind.NONDETERMINISTIC,
                f"{name}: two calls on identical inputs differ by up to {out.repeat_max_abs_diff:.3g}",
            )
        if out.other_input_max_abs_diff <= tol + INPUT_DEPENDENCE_REL * out.max_abs:
            why = " (get_inputs() returned the same inputs under both seeds)" if inputs_identical else ""
            add(
                ProblemKind.INPUT_INDEPENDENT,
                f"{name}: outputs for two different inputs differ by only {out.other_input_max_abs_diff:.3g}{why}",
            )
        if out.max_abs <= tol:
            add(
                ProblemKind.NEAR_CONSTANT,
                f"{name}: all |y| <= {out.max_abs:.3g}, so an all-zeros output passes",
            )
        elif out.numel > 1 and out.std <= NEAR_CONSTANT_REL_STD * out.rms:
            add(
                ProblemKind.NEAR_CONSTANT,
                f"{name}: std {out.std:.3g} is tiny against RMS {out.rms:.3g}, so a constant fill nearly passes",
            )
    order = list(ProblemKind)
    return sorted(found.items(), key=lambda item: order.index(item[0]))


# ---------------------------------------------------------------------------------------------------------
# Parent side


def check_reference(source: str, *, timeout_s: float = 60.0, entry_point: str = "Model") -> ReferenceCheck:
    """Run one reference program on CPU in a fresh child process and report its problems.

    Args:
        source: the complete program (``entry_point`` class, ``get_inputs``, ``get_init_inputs``).
        timeout_s: wall-clock budget for the whole child (interpreter start and torch import included).
        entry_point: name of the ``nn.Module`` class to build.
    """
    _check_arguments(timeout_s, entry_point)
    started = time.perf_counter()
    with _Workspace(source) as ws:
        argv = [sys.executable, "-I", _THIS_FILE, "--child", str(ws.program), str(ws.result), entry_point]
        returncode, timed_out = _run_child(argv, cwd=ws.folder, log=ws.log, timeout_s=timeout_s)
        return _verdict(ws, returncode, timed_out, timeout_s, time.perf_counter() - started)


def check_references(
    sources: Iterable[str],
    *,
    num_workers: int = 2,
    timeout_s: float = 60.0,
    entry_point: str = "Model",
    progress: bool = True,
    warm: bool = True,
) -> list[ReferenceCheck]:
    """Check many programs, ``num_workers`` at a time; results in input order.

    Args:
        warm: fork each check from a server process that imported torch once (about 0.1 s of start-up per
            program instead of ~2 s; every program still runs in its own fresh process and process group).
            Falls back to one fresh interpreter per program if the server cannot start.
        timeout_s: per program; with ``warm`` it excludes the (already paid) torch import.
    """
    _check_arguments(timeout_s, entry_point)
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    from tqdm.auto import tqdm  # lazy: keep the child's import of this file to the standard library

    programs = list(sources)
    server = _ForkServer.start() if warm and programs else None

    def one(source: str) -> ReferenceCheck:
        if server is not None and server.alive:
            try:
                return server.check(source, timeout_s=timeout_s, entry_point=entry_point)
            except _ForkServerError as exc:
                logger.warning("fork server failed (%s); checking in fresh interpreters instead", exc)
        return check_reference(source, timeout_s=timeout_s, entry_point=entry_point)

    try:
        with ThreadPoolExecutor(max_workers=num_workers, thread_name_prefix="refcheck") as pool:
            futures = [pool.submit(one, src) for src in programs]
            bar = tqdm(
                as_completed(futures), total=len(futures), desc="reference checks", disable=not progress
            )
            for _ in bar:
                pass
            return [f.result() for f in futures]
    finally:
        if server is not None:
            server.close()


_THIS_FILE = str(Path(__file__).resolve())


def _check_arguments(timeout_s: float, entry_point: str) -> None:
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # One thread per child: several checks run side by side on few cores, and one thread keeps CPU sums in a
    # fixed order.
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


class _Workspace:
    """A fresh temporary folder holding one program, its result file, its output log and its exit status."""

    def __init__(self, source: str):
        self._tmp = tempfile.TemporaryDirectory(prefix="refcheck_")
        self.folder = Path(self._tmp.name)
        self.program = self.folder / "reference_program.py"
        self.result = self.folder / "result.json"
        self.log = self.folder / "output.log"
        self.status = self.folder / "status.json"  # written by the fork server once it reaped the child
        self.program.write_text(source, encoding="utf-8")

    def __enter__(self) -> _Workspace:
        return self

    def __exit__(self, *exc_info) -> None:
        self._tmp.cleanup()

    def tail(self) -> str:
        """The last OUTPUT_TAIL_BYTES of the child's stdout+stderr."""
        try:
            with self.log.open("rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                fh.seek(max(0, size - OUTPUT_TAIL_BYTES))
                tail = fh.read().decode("utf-8", errors="replace")
        except OSError:
            return ""
        if size > OUTPUT_TAIL_BYTES:
            tail = f"[... {size - OUTPUT_TAIL_BYTES} earlier bytes dropped]\n" + tail
        return tail


def _verdict(
    ws: _Workspace, returncode: int | None, timed_out: bool, timeout_s: float, seconds: float
) -> ReferenceCheck:
    """Turn what a finished (or killed) child left behind into a ReferenceCheck."""
    report = _read_json(ws.result)
    tail = ws.tail()
    if timed_out:
        stage = f" during {report['stage']}" if report else ""
        return _failed(
            ProblemKind.TIMEOUT,
            f"no result after {timeout_s:g} s{stage}; process group killed",
            tail,
            seconds,
        )
    if report is None or (not report.get("finished", False) and report.get("error") is None):
        if returncode is None:
            how = "exit status unknown"
        else:
            how = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        return _failed(ProblemKind.CRASH, f"child died without a result ({how})", tail, seconds)
    if report.get("error") is not None:
        err = report["error"]
        reason = f"{err['stage']} raised {err['type']}: {err['message']}\n{err['traceback']}"
        return _failed(ProblemKind.CRASH, reason, tail, seconds)

    outputs = [OutputStats.from_dict(o) for o in report["outputs"]]
    found = classify_outputs(outputs, inputs_identical=report["inputs_identical"])
    details = "; ".join(f"{kind.value}: {reason}" for kind, reason in found) or "ok"
    return ReferenceCheck(
        ok=not found, problems=[k for k, _ in found], details=details, seconds=seconds, outputs=outputs
    )


def _failed(kind: ProblemKind, reason: str, tail: str, seconds: float) -> ReferenceCheck:
    details = f"{kind.value}: {reason}"
    if tail.strip():
        details += f"\n--- child output (tail) ---\n{tail}"
    logger.debug("reference check failed: %s", details)
    return ReferenceCheck(ok=False, problems=[kind], details=details, seconds=seconds)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def _run_child(argv: list[str], *, cwd: Path, log: Path, timeout_s: float) -> tuple[int, bool]:
    """Run argv in its own session; returns (returncode, timed_out). Always kills the whole group at the end."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=_child_env(),
            start_new_session=True,
        )  # fmt: skip
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _kill_group(proc.pid)  # the child leads its own group: no grandchild outlives the check
            proc.wait()
    return proc.returncode, timed_out


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


class _ForkServerError(RuntimeError):
    """The fork server died or answered nonsense."""


class _ForkServer:
    """Parent handle on ``python -I reference_checks.py --fork-server``: a process that imported torch once and
    forks one child per request. Each child gets its own process group (so the parent can kill it whole),
    stdin ``/dev/null``, its own log file and the same limits as a fresh child; the server reaps it and writes
    its exit status to the request's status file. Requests and replies are one JSON line each, under a lock.
    """

    START_TIMEOUT_S = 120.0
    REPLY_TIMEOUT_S = 30.0
    POLL_S = 0.02

    def __init__(self, proc: subprocess.Popen, stderr_log: Path, tmp: tempfile.TemporaryDirectory):
        self._proc = proc
        self._stderr_log = stderr_log
        self._tmp = tmp
        self._lock = threading.Lock()
        self.alive = True

    @classmethod
    def start(cls) -> _ForkServer | None:
        tmp = tempfile.TemporaryDirectory(prefix="refcheck_server_")
        stderr_log = Path(tmp.name) / "server.log"
        with stderr_log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", _THIS_FILE, "--fork-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, cwd=tmp.name, env=_child_env(), start_new_session=True,
            )  # fmt: skip
        server = cls(proc, stderr_log, tmp)
        try:
            server._read_line(cls.START_TIMEOUT_S)  # {"ready": true} once torch is imported
        except _ForkServerError as exc:
            logger.warning("reference-check fork server did not start: %s", exc)
            server.close()
            return None
        return server

    def _read_line(self, timeout_s: float) -> dict:
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        line = self._proc.stdout.readline() if ready else b""
        if not line:
            self.alive = False
            err = self._stderr_log.read_text(errors="replace")[-OUTPUT_TAIL_BYTES:]
            raise _ForkServerError(f"no answer within {timeout_s:g} s (exit code {self._proc.poll()}): {err}")
        return json.loads(line)

    def check(self, source: str, *, timeout_s: float, entry_point: str) -> ReferenceCheck:
        started = time.perf_counter()
        with _Workspace(source) as ws:
            request = {
                "program": str(ws.program), "result": str(ws.result), "log": str(ws.log),
                "status": str(ws.status), "cwd": str(ws.folder), "entry_point": entry_point,
            }  # fmt: skip
            with self._lock:
                if not self.alive:
                    raise _ForkServerError("server is gone")
                try:
                    self._proc.stdin.write((json.dumps(request) + "\n").encode())
                    self._proc.stdin.flush()
                except OSError as exc:
                    self.alive = False
                    raise _ForkServerError(f"cannot send a request: {exc}") from exc
                pid = int(self._read_line(self.REPLY_TIMEOUT_S)["pid"])
            deadline = started + timeout_s
            timed_out = False
            while not ws.status.exists():
                if time.perf_counter() > deadline:
                    timed_out = True
                    break
                time.sleep(self.POLL_S)
            if timed_out:
                _kill_group(pid)  # still unreaped, so the id cannot have been reused yet
                # The server reaps it and writes the status; wait briefly so the log is complete.
                grace = time.perf_counter() + 5.0
                while not ws.status.exists() and time.perf_counter() < grace:
                    time.sleep(self.POLL_S)
            status = _read_json(ws.status) or {}
            return _verdict(ws, status.get("returncode"), timed_out, timeout_s, time.perf_counter() - started)

    def close(self) -> None:
        """Closing stdin tells the server to kill what is left and exit; its group is killed regardless."""
        self.alive = False
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            _kill_group(self._proc.pid)
            self._proc.wait()
            self._proc.stdout.close()
            self._tmp.cleanup()


# ---------------------------------------------------------------------------------------------------------
# Child side. Two ways in, the same checks:
#   python -I reference_checks.py --child PROGRAM RESULT ENTRY_POINT   (a fresh interpreter per program)
#   python -I reference_checks.py --fork-server                       (forks one child per request line)


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
            _kill_group(pid)  # grandchildren left in the group die with the check
            status_file = running.pop(pid)
            tmp = status_file + ".tmp"
            Path(tmp).write_text(json.dumps({"returncode": os.waitstatus_to_exitcode(wait_status)}))
            os.replace(tmp, status_file)  # atomic: the parent never reads half a file
    for pid in running:
        _kill_group(pid)
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
            first = _tensors(model(*_clone(inputs_a)))
            again = _tensors(model(*_clone(inputs_a)))
            other = _tensors(model(*_clone(inputs_b)))

        stage("statistics")
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


# ---------------------------------------------------------------------------------------------------------
# Command line: ``python -m dataset_builder.reference_checks [FILE ...] [--tasks small|full]``


def main(argv: Sequence[str] | None = None) -> int:
    """Check reference files and/or the shipped task set; print one line per program; exit 1 on any problem."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m dataset_builder.reference_checks",
        description="Run PyTorch reference programs on CPU in isolated child processes and report problems "
        "(crash, timeout, nondeterministic, input_independent, near_constant, no_tensor_output, non_finite).",
    )
    parser.add_argument("files", nargs="*", type=Path, help="reference programs (*.py) to check")
    parser.add_argument(
        "--tasks", choices=["small", "full"], help="also check the shipped task set at this size preset"
    )
    parser.add_argument("--names", nargs="+", help="with --tasks: only these task names")
    parser.add_argument("--entry-point", default="Model", help="nn.Module class to build (default: Model)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per program (default: 60)")
    parser.add_argument("--workers", type=int, default=2, help="programs checked at a time (default: 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per program instead")
    args = parser.parse_args(argv)
    if args.names and not args.tasks:
        parser.error("--names needs --tasks")

    labelled: list[tuple[str, str]] = []
    for path in args.files:
        try:
            labelled.append((str(path), path.read_text(encoding="utf-8")))
        except OSError as exc:
            parser.error(f"cannot read {path}: {exc}")
    if args.tasks:
        from dataset_builder.tasks import load_tasks

        try:
            labelled += [
                (f"task {t.name} ({t.preset})", t.source) for t in load_tasks(args.tasks, args.names)
            ]
        except ValueError as exc:
            parser.error(str(exc))
    if not labelled:
        parser.error("nothing to check: give reference files and/or --tasks")

    results = check_references(
        [src for _, src in labelled],
        num_workers=args.workers,
        timeout_s=args.timeout,
        entry_point=args.entry_point,
    )
    for (label, _), result in zip(labelled, results, strict=True):
        if args.json:
            print(json.dumps({"program": label, **result.to_dict()}))
        else:
            verdict = "ok" if result.ok else ",".join(p.value for p in result.problems)
            first_line = result.details.splitlines()[0] if result.details else ""
            print(f"{label}\t{verdict}\t{result.seconds:.1f}s" + ("" if result.ok else f"\t{first_line}"))
    bad = sum(not r.ok for r in results)
    print(f"{len(results) - bad} ok, {bad} with problems", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.exit(_child_main(sys.argv[2], sys.argv[3], sys.argv[4]))
    if sys.argv[1:] == ["--fork-server"]:
        sys.exit(_fork_server_main())
    sys.exit(main())
