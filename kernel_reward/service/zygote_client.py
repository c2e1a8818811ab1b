"""The service's handle on its zygote: start it, ask it to fork a child, kill a child's whole group.

The zygote (``kernel_reward.service.zygote``) is a pre-imported process that forks one child per candidate, each child a
judge that forks its own sandboxed runner. ``ZygoteClient`` starts it with a clean environment (``sandbox
.ENV_ALLOW_LIST`` plus ``PoolConfig.env``), the device's GPU and the host's shared timing lock, and a reader thread
dispatches its replies; ``ChildHandle`` is the service's ends of one child.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_reward import sandbox
from kernel_reward.ipc import wire
from kernel_reward.request import USABLE_DEVICE_MEMORY
from kernel_reward.runtime import SOURCE_ROOT, Mode
from kernel_reward.service.devices import physical_gpu
from kernel_reward.service.gpu_lock import TURNSTILE_SUFFIX

if TYPE_CHECKING:
    from kernel_reward.service.config import PoolConfig


POOL_ID_ENV = "KERNEL_REWARD_POOL_ID"  # set in every zygote (and so every child): lets tests find leaks


class InfrastructureError(RuntimeError):
    """The execution machinery failed (not the candidate): the request may be retried."""


# ------------------------------------------------------------------------------------------------ zygote client


class ChildHandle:
    """The service's ends of one forked child: its channel, its output pipe and its exit code (when known)."""

    def __init__(self, pid: int, channel: socket.socket, output_fd: int) -> None:
        self.pid = pid
        self.channel = channel
        self.output_fd = output_fd
        self.reader = wire.MessageReader(channel)
        self.exited: concurrent.futures.Future = concurrent.futures.Future()
        self.isolation: dict[str, Any] = {}
        self.warmup_seconds: dict[str, float] = {}  # the child's own warm-up stages, from its "ready" message
        self.next_group_scan = 0.0  # monotonic time of the next whole-group memory scan
        self.tmpfs_bytes = 0  # files in its private tmpfs mounts, as of the last group scan
        self.ready = False
        self.closed = False
        channel.setblocking(False)
        os.set_blocking(output_fd, False)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.channel.close()
            os.close(self.output_fd)


class ZygoteClient:
    """Starts one zygote and talks to it; a reader thread dispatches its replies."""

    def __init__(self, config: PoolConfig, state_dir: Path, pool_id: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.lock = threading.Lock()
        self.pending_spawns: dict[int, concurrent.futures.Future] = {}
        self.children: dict[int, ChildHandle] = {}
        self.counter = 0
        self.dead = threading.Event()
        self.hello: concurrent.futures.Future = concurrent.futures.Future()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control = ours
        cuda = config.mode is Mode.GPU
        # An allow-list, not the service's environment: its tokens and keys never reach a judge or, through the
        # judge's memory, the runner forked from it. ``PoolConfig.env`` adds what a deployment needs on purpose.
        env = {name: os.environ[name] for name in sandbox.ENV_ALLOW_LIST if name in os.environ}
        env.update(config.env)
        env[POOL_ID_ENV] = pool_id
        # Children import lazily after chdir into their private dir: make our package (and the caller's working
        # directory, e.g. a checkout without an install) importable by absolute path.
        package_root = str(SOURCE_ROOT)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, os.getcwd(), env.get("PYTHONPATH")) if p
        )
        env.setdefault("OMP_NUM_THREADS", "1")
        if cuda:
            env.pop("TRITON_INTERPRET", None)
            env["CUDA_VISIBLE_DEVICES"] = physical_gpu(int(config.device[5:]))
        else:
            env["TRITON_INTERPRET"] = "1"  # must be set before triton is imported: the zygote imports it
            env["CUDA_VISIBLE_DEVICES"] = ""
        lock_path = device_lock_file(config, "timing")
        usable = usable_memory_fraction(config) if cuda else None
        zygote_config = {
            "device": "cuda" if cuda else "cpu",
            "worker_module": config.worker_module,
            "policy": config.policy.to_dict(),
            "state_dir": str(state_dir),
            "lock_path": str(lock_path),
            "gpu_memory_fraction": (config.gpu_memory_fraction or round(usable / config.workers, 3))
            if cuda
            else None,
            "usable_memory_fraction": usable if cuda else None,
            "seed_triton_cache": cuda,
            "exclusive_gpu_timing": config.exclusive_gpu_timing,
            "launch_ledger": config.runs_launch_ledger,  # asked for on a CPU, its runners say why it cannot
        }
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kernel_reward.service.zygote",
                "--control-fd",
                str(theirs.fileno()),
                "--config",
                json.dumps(zygote_config),
            ],
            pass_fds=[theirs.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        theirs.close()
        self.reader_thread = threading.Thread(
            target=self._read_loop, name=f"zygote-{config.device}", daemon=True
        )
        self.reader_thread.start()

    def wait_started(self, timeout_s: float) -> None:
        try:
            self.hello.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError as exc:
            raise InfrastructureError(
                f"zygote for {self.config.device} did not start within {timeout_s:.0f} s"
            ) from exc

    def _read_loop(self) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
            except OSError:
                data, fds = b"", []
            if not data:
                break
            message = json.loads(data)
            op = message.get("op")
            if op == "hello":
                self.hello.set_result(message)
            elif op == "spawned":
                child = ChildHandle(message["pid"], socket.socket(fileno=fds[0]), fds[1])
                with self.lock:
                    self.children[child.pid] = child
                    future = self.pending_spawns.pop(message["id"], None)
                if future is not None:
                    future.set_result(child)
            elif op == "exited":
                with self.lock:
                    child = self.children.pop(message["pid"], None)
                if child is not None:
                    child.exited.set_result(message.get("returncode"))
        self.dead.set()
        error = InfrastructureError(f"zygote for {self.config.device} exited (code {self.process.poll()})")
        if not self.hello.done():
            self.hello.set_exception(error)
        with self.lock:
            pending, self.pending_spawns = list(self.pending_spawns.values()), {}
            children, self.children = list(self.children.values()), {}
        for future in pending:
            future.set_exception(error)
        for child in children:
            if not child.exited.done():
                child.exited.set_result(None)

    def spawn(self, timeout_s: float = 30.0) -> ChildHandle:
        if self.dead.is_set():
            raise InfrastructureError(f"zygote for {self.config.device} is not running")
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self.lock:
            self.counter += 1
            self.pending_spawns[self.counter] = future
            self._send({"op": "spawn", "id": self.counter})
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError as exc:
            raise InfrastructureError(
                f"zygote for {self.config.device} did not fork within {timeout_s} s"
            ) from exc

    def kill(self, child: ChildHandle) -> None:
        """Kill the child's process group and private uid; the zygote reaps it and reports the exit code."""
        if not self.dead.is_set() and not child.exited.done():
            with self.lock:
                self._send({"op": "kill", "pid": child.pid})
        child.close()

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError as exc:
            raise InfrastructureError(f"zygote for {self.config.device} unreachable: {exc}") from exc

    def close(self, timeout_s: float = 15.0) -> None:
        """Closing the control socket makes the zygote kill its children and exit; SIGKILL it if it lingers."""
        try:
            self.control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            sandbox.kill_process_group(self.process.pid)
            self.process.wait()
        self.reader_thread.join(timeout=5)


def usable_memory_fraction(config: PoolConfig) -> float:
    """The share of its GPU a pool spreads over its workers: the pool's (``ServiceConfig.for_device`` reads it
    from the card's free memory), else ``USABLE_DEVICE_MEMORY``."""
    if config.usable_memory_fraction is not None:
        return config.usable_memory_fraction
    return USABLE_DEVICE_MEMORY


LOCK_NAMES = {"timing": "", "share": ".share"}  # the timing lock keeps its first name: cuda0.lock


def device_lock_file(config: Any, purpose: str) -> Path:
    """``timing_lock_file`` of ``config.device`` in ``config.lock_dir`` (default: <tmp>/kernel_reward_locks) for
    ``purpose``: "timing" (gpu_lock, held by children around timing) or "share" (pool.DeviceShare, held by the
    service around whole evaluations)."""
    lock_dir = Path(config.lock_dir or Path(tempfile.gettempdir()) / "kernel_reward_locks")
    return timing_lock_file(lock_dir, config.device, LOCK_NAMES[purpose])


def timing_lock_file(lock_dir: Path, device: str, suffix: str = "") -> Path:
    """The per-device lock every service on this host shares, usable by any user (and its turnstile beside it,
    ``<path>.turnstile``: see gpu_lock); ``suffix`` names a lock other than timing's.

    The folder is sticky and world-writable like /tmp (services of different users must serialise their timing
    on one GPU) and the file world-readable: ``flock`` needs only a read descriptor, so children open it
    read-only. Creating both here, in the trusted service, keeps a candidate from ever choosing their modes.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    if lock_dir.stat().st_uid == os.geteuid():
        os.chmod(lock_dir, 0o1777)
    path = lock_dir / f"{device.replace(':', '')}{suffix}.lock"
    for file in (path, path.with_name(path.name + TURNSTILE_SUFFIX)):  # the pair gpu_lock.GpuLock needs
        if not file.exists():
            file.touch(exist_ok=True)
            os.chmod(file, 0o644)  # explicit: touch's mode is filtered by the umask
    return path
