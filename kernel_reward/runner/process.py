"""Starting the untrusted runner, and the judge's end of its channel.

``spawn_runner`` forks the runner from the judge BEFORE the judge creates a CUDA context (a forked process must
not inherit one) and, in the child, applies every sandbox layer before any candidate code can arrive:

  fresh mount, network, IPC and UTS namespaces with new private tmpfs over /tmp, /var/tmp, /dev/shm (the judge's
  files, the reference among them, are not in them) -> PID namespace (the runner is pid 1 and sees only itself
  in a fresh /proc) -> read-only file system except its private tmpfs -> clean environment (an allow-list) ->
  its own private uid -> no_new_privs and the seccomp filter -> CUDA context / Triton known-answer check ->
  torch.compile severed -> rlimits -> "ready".

``RunnerClient`` is the judge's end: one request, one reply, and every reply is validated. A reply that is not a
well-formed frame of an expected type, or an end of file, is the candidate's fault (``RunnerFault``), never a
result."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NoReturn

from kernel_reward import sandbox
from kernel_reward.ipc import wire
from kernel_reward.ipc.ledger import LedgerReader
from kernel_reward.ipc.runner_channel import RunnerProcess
from kernel_reward.runtime import Mode

RUNNER_ROOT = Path("/tmp/runner")  # inside the runner's own private tmpfs


def spawn_runner(
    device: str,
    policy: sandbox.SandboxPolicy,
    *,
    uid: int | None,
    expose: list[str],
    seed_files: dict[str, bytes] | None = None,
    gpu_memory_fraction: float | None = None,
    ledger_library: Path | None = None,
) -> RunnerProcess:
    """Fork a sandboxed runner for ``device`` ("cpu" or "cuda"). The caller must not hold a CUDA context yet.
    ``ledger_library``: the built launch ledger (``ipc.ledger_build.build``), started on a pipe whose read end
    only this process keeps (``RunnerProcess.ledger``; the caller starts its reader once it has entered its own
    sandbox, which needs a single-threaded process)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ledger_r, ledger_w = os.pipe() if ledger_library is not None else (None, None)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        ours.close()
        if ledger_r is not None:
            os.close(ledger_r)
        ledger = (ledger_library, ledger_w) if ledger_library is not None else None
        _runner_main(theirs, device, policy, uid, expose, seed_files or {}, gpu_memory_fraction, ledger)
    theirs.close()
    process = RunnerProcess(pid, ours)
    if ledger_r is not None:
        os.close(ledger_w)
        process.ledger = LedgerReader(ledger_r)
    return process


def _runner_main(
    channel: socket.socket,
    device: str,
    policy: sandbox.SandboxPolicy,
    uid: int | None,
    expose: list[str],
    seed_files: dict[str, bytes],
    gpu_memory_fraction: float | None,
    ledger_spec: tuple[Path, int] | None = None,
) -> NoReturn:
    code = 70
    stage = "sandbox"
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        keep = sorted({0, 1, 2, channel.fileno(), *([ledger_spec[1]] if ledger_spec else [])})
        # the library is read now: the sandbox's file system will not show it
        ledger = _load_ledger(ledger_spec)
        sandbox.close_fds_except(keep)
        sandbox.set_parent_death_signal()
        isolation = sandbox.Isolation.for_policy(policy)
        isolation.process = "runner: forked by the judge, sandboxed before the candidate arrives"
        root = os.geteuid() == 0
        sandbox.enter_namespaces(policy, isolation, expose=expose)
        sandbox.enter_pid_namespace(policy, isolation)
        home = _private_tree(uid if root else None, seed_files)
        if policy.read_only_filesystem:
            sandbox.make_filesystem_read_only(isolation, writable=list(sandbox.PRIVATE_TMPFS_MOUNTS))
        environment = {
            "HOME": str(home),
            "TMPDIR": str(home),
            "TRITON_CACHE_DIR": str(home / "triton-cache"),
            "TRITON_HOME": str(home),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
            # torch.compile off: compiler-generated kernels are not the candidate's work (KernelBench issue #166);
            # a call the static screen missed then runs as plain torch and counts as torch in coverage
            "TORCH_COMPILE_DISABLE": "1",
            # One hardware work queue: the runner needs no more (one stream; side streams are screened out and
            # only slow a candidate down), and its CUDA context is created 4x faster when 16 processes create
            # theirs at once (H200: 0.71 s against 2.75 s median, benchmarks/context_probe.py), which is what a
            # warm pool does all the time
            "CUDA_DEVICE_MAX_CONNECTIONS": "1",
            **({"USER": f"sandbox{uid}", "LOGNAME": f"sandbox{uid}"} if uid is not None and root else {}),
        }
        if policy.clean_environment:
            isolation.env_kept = sandbox.clean_environment(sandbox.ENV_ALLOW_LIST, environment)
        else:
            os.environ.update(environment)
        sandbox.drop_privileges(policy, isolation, uid)
        sandbox.restrict_syscalls(policy, isolation)
        os.chdir(home / "work")
        stage = "warmup"
        from kernel_reward.runtime import prepare_worker

        info = prepare_worker(device, triton_check=ledger is None)
        # before the known-answer kernel and the clock's reading: the judge looks for both records
        ledger_state, clock_stamp = _start_ledger(ledger, info)
        import torch

        from kernel_reward.runner.compile_guard import sever_torch_compile

        sever_torch_compile()

        if info.mode is Mode.GPU and gpu_memory_fraction is not None:
            torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction)
            isolation.gpu_memory_fraction = gpu_memory_fraction
        sandbox.apply_rlimits(policy.limits, isolation, address_space=info.mode is not Mode.GPU)
        from kernel_reward.runner.runner import Runner

        runner = Runner(channel, torch.device(info.device), home / "work")
        wire.send_message(
            channel,
            {
                "type": "ready",
                "isolation": isolation.to_dict(),
                "pid": os.getpid(),
                "warmup": info.warmup_seconds,
                "ledger": ledger_state,
                "clock_stamp": clock_stamp,
            },
        )
        stage = "serving"
        runner.ledger = ledger[0] if ledger_state == LEDGER_STARTED else None  # type: ignore[index]
        runner.serve()
        code = 0
    except BaseException:  # noqa: BLE001 - report whatever happened and exit; never return into the judge's code
        with contextlib.suppress(BaseException):
            wire.send_message(
                channel, {"type": "error", "stage": stage, "error": traceback.format_exc(limit=20)}
            )
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


LEDGER_STARTED = "started"


def _load_ledger(spec: tuple[Path, int] | None) -> tuple[Any, int] | str | None:
    """The loaded ledger and its descriptor; the reason as text when it cannot be loaded; None when not asked."""
    if spec is None:
        return None
    from kernel_reward.runner.launch_ledger import LaunchLedger

    try:
        return LaunchLedger(spec[0]), spec[1]
    except OSError as exc:
        return f"loading {spec[0].name} failed: {exc}"


def _start_ledger(ledger: tuple[Any, int] | str | None, info: Any) -> tuple[str | None, int | str | None]:
    """Start the ledger on its descriptor once the CUDA context exists, then run the known-answer kernel (its
    record shows the judge the ledger is live) and read the GPU's clock (its record gives the judge the offset of
    CUPTI's timestamps from that clock, ``common.gpu_clock``). Returns LEDGER_STARTED, the reason it did not start,
    or None; and the clock's reading (None unless the ledger started on a GPU; the error, as text, when it failed)."""
    if ledger is None:
        return None, None
    import torch

    from kernel_reward.runner.launch_ledger import LedgerUnavailable
    from kernel_reward.runner.selftest import known_answer_check

    started = time.perf_counter()
    state = ledger if isinstance(ledger, str) else LEDGER_STARTED
    if not isinstance(ledger, str):
        try:
            ledger[0].start(ledger[1])
        except LedgerUnavailable as exc:
            state = str(exc)

    device = torch.device(info.device)
    known_answer_check(device)
    stamp = None
    if state == LEDGER_STARTED and device.type == "cuda":
        from kernel_reward.common.gpu_clock import read_now

        try:
            stamp = read_now(device)
        except Exception as exc:  # noqa: BLE001 - the judge says why its window is unanchored; the ledger still counts
            stamp = f"{type(exc).__name__}: {str(exc)[:300]}"
    info.warmup_seconds["ledger_and_known_answer"] = round(time.perf_counter() - started, 4)
    return state, stamp


def _private_tree(uid: int | None, seed_files: dict[str, bytes]) -> Path:
    """The runner's home, work dir and Triton cache (seeded with the trusted pre-compiled launcher stubs)."""
    home = sandbox.make_private_dir(RUNNER_ROOT, uid)
    for sub in ("work", "triton-cache", ".cache", "inductor"):
        sandbox.make_private_dir(home / sub, uid)
    cache = home / "triton-cache"
    for rel, data in seed_files.items():
        target = cache / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if uid is not None:
        for path in cache.rglob("*"):
            os.chown(path, uid, uid)
    return home


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(
        prog="python -m kernel_reward.runner.process",
        description="A sandboxed candidate runner (started by the judge, not by hand).",
    )
    parser.add_argument("--fd", type=int, required=True, help="inherited stream socket to the judge")
    parser.add_argument("--config", required=True, help="JSON: device, policy, uid, expose")
    args = parser.parse_args(argv)
    config = json.loads(args.config)
    policy = sandbox.SandboxPolicy.from_dict(config["policy"])
    ledger = (
        (Path(config["ledger_library"]), int(config["ledger_fd"])) if "ledger_library" in config else None
    )
    _runner_main(
        socket.socket(fileno=args.fd),
        config["device"],
        policy,
        config.get("uid"),
        config["expose"],
        {},
        None,
        ledger,
    )


if __name__ == "__main__":
    main()
