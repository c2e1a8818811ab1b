"""Per-device zygote: a trusted process that imported torch/Triton once and forks one child per candidate.

Started by the pool as ``python -m kernel_reward.service.zygote --control-fd N --config JSON`` (an exec'd
process, so it never inherits the service's threads or CUDA state); it never creates a CUDA context itself. With
the real worker each child is a JUDGE: right after the fork, before any CUDA context and while still root, it forks
its sandboxed RUNNER (``runner.process.spawn_runner``: the only process that will hold the candidate's code), then
takes its own namespaces and uid; both warm up while idle. A worker module without ``JUDGES_A_RUNNER`` (the tests'
fake worker) runs the request in the child itself. Each child serves exactly ONE request and exits; the kill takes
its process group and both private uids. The control protocol (SOCK_SEQPACKET, descriptors by SCM_RIGHTS) and the
child protocol (``wire`` frames): docs/service.md#the-zygote.

Why one module (395 lines): the fork server and the child it forks are one protocol (the control socket's
messages, the fork, the child's sandbox set-up, the evaluation, the reaping); splitting the two halves would
separate each message from its handler.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import json
import logging
import os
import random
import select
import shutil
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kernel_reward import sandbox
from kernel_reward.ipc import wire
from kernel_reward.request import USABLE_DEVICE_MEMORY
from kernel_reward.runtime import Mode, mode_of
from kernel_reward.service.gpu_lock import TURNSTILE_SUFFIX, GpuLock

log = logging.getLogger("kernel_reward.service.zygote")

CHILD_ROOT_IN_NAMESPACE = Path("/tmp/candidate")  # inside the child's private tmpfs
# Private uids: each child takes the next pair of a block (the judge the even uid, its runner the odd one above),
# and no uid is handed out twice by a zygote: what a candidate leaves under its uid cannot reach a later one. A
# block starts at a random multiple of UID_BLOCK between UID_FLOOR and UID_CEILING (system and login accounts lie
# below); a used-up block is replaced by another random one.
UID_BLOCK = 1 << 16
UID_FLOOR = 1 << 20
UID_CEILING = 1 << 31


@dataclass
class ZygoteConfig:
    device: str  # "cpu" (Triton interpreter) or "cuda" (the one GPU this zygote's environment shows)
    worker_module: str  # provides preimport(), prepare_worker(device) and evaluate_request(request, *, work_dir, device, ...)
    policy: dict[str, Any]  # SandboxPolicy.to_dict()
    state_dir: str  # trusted scratch space of the service (seed cache, fallback work dirs)
    lock_path: str  # per-GPU timing lock (flock), shared by every process that times on this GPU
    gpu_memory_fraction: float | None = None
    usable_memory_fraction: float | None = None  # an evaluation run alone gets this (PoolConfig's)
    seed_triton_cache: bool = False
    exclusive_gpu_timing: bool = True  # PoolConfig.exclusive_gpu_timing
    launch_ledger: bool = False  # PoolConfig.launch_ledger
    uid_base: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> Mode:
        """Where this zygote's children run candidates (decided by its device, once)."""
        return mode_of(self.device)


def runner_uid_of(uid: int | None) -> int | None:
    """The private uid of a judge's runner: the odd uid above the judge's even one."""
    return None if uid is None else uid + 1


class UidPairs:
    """Hands out (judge, runner) uid pairs, each once: the even uids of a random block in turn, then a new block
    this zygote has not used."""

    def __init__(self, first_block: int | None = None) -> None:
        if first_block is not None and (
            first_block % UID_BLOCK or not UID_FLOOR <= first_block < UID_CEILING
        ):
            raise ValueError(f"uid_base must be a multiple of {UID_BLOCK} in [{UID_FLOOR}, {UID_CEILING})")
        self._used_blocks: set[int] = set()
        self._start_block(first_block if first_block is not None else self._fresh_block())

    def _fresh_block(self) -> int:
        while True:
            block = random.randrange(UID_FLOOR // UID_BLOCK, UID_CEILING // UID_BLOCK) * UID_BLOCK
            if block not in self._used_blocks:
                return block

    def _start_block(self, block: int) -> None:
        self._used_blocks.add(block)
        self._next, self._end = block, block + UID_BLOCK

    def take(self) -> int:
        """The judge's uid of the next pair (its runner's is ``runner_uid_of`` of it)."""
        if self._next >= self._end:
            self._start_block(self._fresh_block())
        uid = self._next
        self._next += 2
        return uid


def _seed_files(seed_dir: Path) -> dict[str, bytes]:
    """The trusted, pre-compiled Triton cache (C launcher stubs etc.) as bytes, copied into each private cache."""
    files = {}
    if seed_dir.is_dir():
        for path in seed_dir.rglob("*"):
            if path.is_file():
                files[str(path.relative_to(seed_dir))] = path.read_bytes()
    return files


def _write_tree(root: Path, files: dict[str, bytes], uid: int | None) -> None:
    for rel, data in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if uid is not None:
        for path in [root, *root.rglob("*")]:
            os.chown(path, uid, uid)


def _timing_slot_factory(
    lock_fd: int, turnstile_fd: int, channel: socket.socket, exclusive_gpu: bool
) -> GpuLock:
    """Exclusive per-GPU timing; with ``exclusive_gpu`` the judge's other GPU phases take the shared side
    (gpu_lock). The service is told when a timing wait starts and ends, so time spent queueing behind other
    candidates' timing does not count against this one's wall clock."""
    return GpuLock(
        lock_fd,
        turnstile_fd,
        on_wait=lambda: wire.send_message(channel, {"type": "slot_wait"}),
        on_acquired=lambda: wire.send_message(channel, {"type": "slot_acquired"}),
        share_gpu_phases=exclusive_gpu,
    )


class ChannelPriors:
    """A judge child's side of the pool's timing-prior store (``service.timing_priors``): each question and each
    offer is one message on the child's channel, answered before the judge goes on (it holds the timing slot)."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel

    def _exchange(self, message: dict[str, Any], reply_type: str) -> dict[str, Any]:
        wire.send_message(self.channel, message)
        reply = wire.recv_message_blocking(self.channel)
        if not isinstance(reply, dict) or reply.get("type") != reply_type:
            raise RuntimeError(f"the service answered a {message['type']} with {reply!r:.200}")
        return reply

    def ask(self, key: str) -> dict[str, Any] | None:
        prior = self._exchange({"type": "prior_ask", "key": key}, "prior").get("prior")
        return prior if isinstance(prior, dict) else None

    def offer(self, key: str, prior: dict[str, Any]) -> None:
        self._exchange({"type": "prior_offer", "key": key, "prior": prior}, "prior_ok")


class Zygote:
    def __init__(self, control: socket.socket, config: ZygoteConfig) -> None:
        self.control = control
        self.config = config
        self.policy = sandbox.SandboxPolicy.from_dict(config.policy)
        self.worker = importlib.import_module(config.worker_module)
        if hasattr(self.worker, "preimport"):
            self.worker.preimport()  # device-free imports, inherited by every child instead of paid in its warm-up
        self.state_dir = Path(config.state_dir)
        self.seed_dir = self.state_dir / "triton-seed"
        self.seed: dict[str, bytes] = {}
        root = os.geteuid() == 0 and self.policy.drop_privileges
        self.uids = UidPairs(config.uid_base) if root else None
        self.children: dict[int, tuple[int | None, Path]] = {}  # pid -> (uid, fallback work root)
        self.kill_requested: set[int] = set()
        self.counter = 0
        self.ledger_library: Path | None = None  # built once, loaded by every runner (ipc.ledger_build)
        self.ledger_unavailable: str | None = None

    # ------------------------------------------------------------------ zygote side
    def serve(self) -> None:
        if self.config.seed_triton_cache:
            self._build_seed_cache()
        if self.config.launch_ledger:
            self._build_ledger()
        self._reply({"op": "hello", "pid": os.getpid(), "seed_files": len(self.seed)})
        while True:
            readable, _, _ = select.select([self.control], [], [], 0.05)
            if readable:
                try:
                    data, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
                except OSError:
                    data = b""
                for fd in fds:
                    os.close(fd)
                if not data:
                    break  # the service went away: take every child with us
                self._handle(json.loads(data))
            self._reap()
        self.shutdown()

    def _handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "spawn":
            pid, fds = self._fork_child()
            try:
                socket.send_fds(
                    self.control,
                    [json.dumps({"op": "spawned", "id": message["id"], "pid": pid}).encode()],
                    fds,
                )
            finally:
                for fd in fds:
                    os.close(fd)
        elif op == "kill":
            pid = int(message["pid"])
            if pid in self.children:
                self._kill(pid)
                self.kill_requested.add(pid)
            else:
                self._reply({"op": "exited", "pid": pid, "returncode": None})
        else:
            log.error("zygote: unknown op %r", op)

    def _kill(self, pid: int) -> None:
        uid, _ = self.children[pid]
        sandbox.kill_process_group(pid)
        if uid is not None:
            sandbox.kill_uid_processes(uid)
            sandbox.kill_uid_processes(runner_uid_of(uid))

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid not in self.children:
                continue
            uid, work_root = self.children.pop(pid)
            # The leader is gone; anything it left behind in its group or under its uid goes too.
            sandbox.kill_process_group(pid)
            if uid is not None:
                sandbox.kill_uid_processes(uid)
                sandbox.kill_uid_processes(runner_uid_of(uid))
            shutil.rmtree(work_root, ignore_errors=True)
            returncode = os.waitstatus_to_exitcode(status)
            self._reply(
                {
                    "op": "exited",
                    "pid": pid,
                    "returncode": returncode,
                    "requested": pid in self.kill_requested,
                }
            )
            self.kill_requested.discard(pid)

    def _reply(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError:
            pass

    def shutdown(self) -> None:
        for pid in list(self.children):
            self._kill(pid)
        deadline = time.monotonic() + 10
        while self.children and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.01)

    def _build_ledger(self) -> None:
        """Compile the launch ledger once, trusted; without it the runners start without one and every result
        says why (``launch_ledger_unavailable``)."""
        from kernel_reward.ipc.ledger_build import build_or_reason

        self.ledger_library, self.ledger_unavailable = build_or_reason(self.state_dir / "launch-ledger")
        if self.ledger_unavailable is not None:
            log.warning("zygote: no launch ledger: %s", self.ledger_unavailable)

    def _build_seed_cache(self) -> None:
        """Compile the worker's known-answer kernel once, trusted, so children start with a warm launcher cache."""
        shutil.rmtree(self.seed_dir, ignore_errors=True)
        self.seed_dir.mkdir(parents=True)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.environ["TRITON_CACHE_DIR"] = str(self.seed_dir)
                info = self.worker.prepare_worker(self.config.device)
                if self.config.launch_ledger and info.device.startswith("cuda"):
                    # a runner with a ledger reads the GPU's clock at start-up: its kernel comes compiled too
                    import torch

                    from kernel_reward.common.gpu_clock import read_now

                    read_now(torch.device(info.device))
                code = 0
            except BaseException:  # noqa: BLE001 - a child reports and exits, whatever happened
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            log.warning("zygote: seeding the Triton cache failed; children compile their own launcher stubs")
        self.seed = _seed_files(self.seed_dir)

    def _fork_child(self) -> tuple[int, list[int]]:
        self.counter += 1
        uid = self.uids.take() if self.uids is not None else None
        work_root = self.state_dir / f"child-{os.getpid()}-{self.counter}"
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            parent_sock.close()
            os.close(out_r)
            self._child_main(child_sock, out_w, uid, work_root)
        child_sock.close()
        os.close(out_w)
        self.children[pid] = (uid, work_root)
        fds = [parent_sock.detach(), out_r]
        return pid, fds

    # ------------------------------------------------------------------ child side (after fork)
    def _child_main(self, channel: socket.socket, out_w: int, uid: int | None, work_root: Path) -> NoReturn:
        code = 70
        stage = "setup"
        try:
            os.setsid()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(out_w, 1)
            os.dup2(out_w, 2)
            lock_fd = os.open(
                self.config.lock_path, os.O_RDONLY
            )  # created by the service (zygote_client.timing_lock_file)
            turnstile_fd = os.open(self.config.lock_path + TURNSTILE_SUFFIX, os.O_RDONLY)
            keep = sorted({0, 1, 2, channel.fileno(), lock_fd, turnstile_fd})
            sandbox.close_fds_except(keep)
            sandbox.set_parent_death_signal()
            isolation = sandbox.Isolation()
            runner = None
            if getattr(self.worker, "JUDGES_A_RUNNER", False):
                # The judge forks its sandboxed runner now: before any CUDA context, and while still root (the
                # runner takes its own namespaces, file system view and uid; the judge never runs candidate code).
                from kernel_reward.runner import process

                runner_uid = runner_uid_of(uid)
                runner = process.spawn_runner(
                    self.config.device,
                    self.policy,
                    uid=runner_uid,
                    expose=_interpreter_paths(self.worker),
                    seed_files=self.seed,
                    gpu_memory_fraction=_half(self.config.gpu_memory_fraction),
                    ledger_library=self.ledger_library,
                )
            sandbox.enter_namespaces(self.policy, isolation, expose=_interpreter_paths(self.worker))
            root = CHILD_ROOT_IN_NAMESPACE if isolation.private_tmp else work_root
            sandbox.make_private_dir(root, uid if os.geteuid() == 0 else None)
            work_dir = sandbox.make_private_dir(root / "work", uid if os.geteuid() == 0 else None)
            home = sandbox.make_private_dir(root / "home", uid if os.geteuid() == 0 else None)
            cache = sandbox.make_private_dir(root / "triton-cache", uid if os.geteuid() == 0 else None)
            _write_tree(cache, self.seed, uid if os.geteuid() == 0 else None)
            os.environ.update(
                {
                    "HOME": str(home),
                    "TMPDIR": str(home),
                    "TRITON_CACHE_DIR": str(cache),
                    "TRITON_HOME": str(home),
                    "XDG_CACHE_HOME": str(home / ".cache"),
                    "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
                    # one hardware queue: the judge uses one stream (its signal words are released
                    # from the host, stream_gate.SharedWords), and its context is created 4x faster
                    # in a busy pool (benchmarks/context_probe.py)
                    "CUDA_DEVICE_MAX_CONNECTIONS": "1",
                }
            )
            if uid is not None and os.geteuid() == 0 and self.policy.drop_privileges:
                # The private uid has no passwd entry: getpass.getuser() (used by torch's inductor/profiler
                # start-up) would raise KeyError; it reads these variables first.
                os.environ.update({"USER": f"sandbox{uid}", "LOGNAME": f"sandbox{uid}"})
            sandbox.drop_privileges(self.policy, isolation, uid)
            sandbox.restrict_syscalls(self.policy, isolation)
            if runner is not None and runner.ledger is not None:
                runner.ledger.start()  # only now: entering the namespaces above needs a single-threaded process
            os.chdir(work_dir)
            stage = "warmup"
            if runner is not None:  # a judge: its runner checks Triton in its own warm-up
                info = self.worker.prepare_worker(self.config.device, triton_check=False)
            else:
                info = self.worker.prepare_worker(self.config.device)
            warmup = dict(getattr(info, "warmup_seconds", {}))
            ready = {"type": "ready", "isolation": isolation.to_dict(), "pid": os.getpid()}
            if runner is not None:
                from kernel_reward.ipc import runner_channel

                runner_channel.wait_ready(runner)
                if self.config.launch_ledger and self.ledger_library is None:
                    runner.ledger_state = self.ledger_unavailable
                ready["isolation"] = _candidate_isolation(isolation, runner)
                warmup.update({f"runner_{k}": v for k, v in runner.warmup_seconds.items()})
            ready["warmup"] = warmup
            wire.send_message(channel, ready)
            stage = "waiting"
            message = wire.recv_message_blocking(channel)
            if message is None or message.get("type") != "request":
                os._exit(0)  # the service no longer needs this warm child
            stage = "request"
            result = self._evaluate(channel, message, isolation, work_dir, (lock_fd, turnstile_fd), runner)
            wire.send_message(channel, {"type": "result", "result": result})
            code = 0
        except BaseException:  # noqa: BLE001 - whatever happens, report it and exit; never return into the zygote
            try:
                wire.send_message(
                    channel, {"type": "error", "stage": stage, "error": traceback.format_exc(limit=20)}
                )
            except BaseException:  # noqa: BLE001
                pass
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def _evaluate(
        self,
        channel: socket.socket,
        message: dict[str, Any],
        isolation: sandbox.Isolation,
        work_dir: Path,
        lock_fds: tuple[int, int],
        runner: Any = None,
    ) -> dict[str, Any]:
        from kernel_reward.request import EvalRequest
        from kernel_reward.result import EvalResult, Status

        request = EvalRequest.from_dict(message["request"])
        limits = self.policy.limits
        if runner is not None:
            # A judge runs no candidate code, and its exchange arena is a file (a memfd on the CPU) as large as a
            # call's inputs and outputs: the file-size limit is the runner's, not the judge's.
            limits = dataclasses.replace(limits, file_size_bytes=None)
        sandbox.apply_rlimits(limits, isolation, address_space=self.config.mode is Mode.INTERPRETER)
        alone_share = self.config.usable_memory_fraction or USABLE_DEVICE_MEMORY
        share = alone_share if request.alone else self.config.gpu_memory_fraction
        fraction = _half(share) if runner is not None else share
        if self.config.mode is Mode.GPU and fraction is not None:
            import torch

            torch.cuda.set_per_process_memory_fraction(fraction)
            isolation.gpu_memory_fraction = fraction
            if (
                runner is not None and request.alone
            ):  # the runner's own cap, raised before any candidate code exists
                from kernel_reward.ipc.runner_channel import RunnerClient

                RunnerClient(runner).ask({"type": "memory_cap", "fraction": fraction}, ("memory_cap_ok",))
        # From here on, whatever happens to this process is the candidate's doing.
        wire.send_message(channel, {"type": "accepted", "isolation": _candidate_isolation(isolation, runner)})
        try:
            slot = _timing_slot_factory(*lock_fds, channel, self.config.exclusive_gpu_timing)
            if runner is not None:
                result = self.worker.evaluate_request(
                    request,
                    work_dir=work_dir,
                    device=self.config.device,
                    timing_slot=slot,
                    runner=runner,
                    priors=ChannelPriors(channel) if self.config.mode is Mode.GPU else None,
                )
            else:
                result = self.worker.evaluate_request(
                    request, work_dir=work_dir, device=self.config.device, timing_slot=slot
                )
        except BaseException as exc:  # noqa: BLE001 - the worker promises not to raise; report if it did anyway
            result = EvalResult.failure(
                Status.CRASHED,
                f"evaluation raised {type(exc).__name__}: {exc}\n{traceback.format_exc(limit=8)}",
            )
        if (
            self.config.mode is Mode.GPU and fraction is not None
        ):  # what pool.needs_device_alone weighs a task against
            import torch

            result.memory["share_bytes"] = int(
                torch.cuda.get_device_properties(torch.device(self.config.device)).total_memory * fraction
            )
        data = result.to_dict()
        data["isolation"] = _candidate_isolation(isolation, runner)
        return data


def _candidate_isolation(own: sandbox.Isolation, runner: Any) -> dict[str, Any]:
    """The isolation record a result carries: that of the process the candidate's code ran in (the runner, when
    this child judges one), with this process's own record under "judge"."""
    if runner is None:
        return own.to_dict()
    return {**runner.isolation, "judge": own.to_dict()}


def _half(fraction: float | None) -> float | None:
    """The judge and its runner split one worker's share of the GPU's memory."""
    return None if fraction is None else round(fraction / 2, 4)


def _interpreter_paths(worker: Any) -> list[str]:
    from kernel_reward.ipc.runner_channel import interpreter_paths

    return interpreter_paths(worker)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m kernel_reward.service.zygote",
        description="Per-device zygote of the kernel_reward pool (started by the pool).",
    )
    parser.add_argument(
        "--control-fd", type=int, required=True, help="inherited SOCK_SEQPACKET control socket"
    )
    parser.add_argument("--config", required=True, help="ZygoteConfig as JSON")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s zygote %(levelname)s %(message)s")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service decides when we stop (control socket EOF)
    control = socket.socket(fileno=args.control_fd)
    config = ZygoteConfig(**json.loads(args.config))
    # Heavy imports happen here, once: every child inherits them through fork.
    import torch  # noqa: F401
    import triton  # noqa: F401

    Zygote(control, config).serve()


if __name__ == "__main__":
    main()
