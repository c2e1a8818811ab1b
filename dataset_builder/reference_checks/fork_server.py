"""Parent handle on the warm fork server (``python -I child.py --fork-server``): one check per forked child.

The server imported torch once, so a check starts in about 0.1 s instead of ~2 s for a fresh interpreter; every
program still runs in its own fresh process and process group.
"""

from __future__ import annotations

import json
import logging
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .child import CHILD_FILE, OUTPUT_TAIL_BYTES, kill_group
from .isolation import Workspace, child_env, read_json
from .outcome import verdict
from .verdicts import ReferenceCheck

logger = logging.getLogger(__name__)


class ForkServerError(RuntimeError):
    """The fork server died or answered nonsense."""


class ForkServer:
    """Parent handle on ``python -I child.py --fork-server``: a process that imported torch once and
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
    def start(cls) -> ForkServer | None:
        tmp = tempfile.TemporaryDirectory(prefix="refcheck_server_")
        stderr_log = Path(tmp.name) / "server.log"
        with stderr_log.open("wb") as err:
            proc = subprocess.Popen(
                [sys.executable, "-I", CHILD_FILE, "--fork-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=err, cwd=tmp.name, env=child_env(), start_new_session=True,
            )  # fmt: skip
        server = cls(proc, stderr_log, tmp)
        try:
            server._read_line(cls.START_TIMEOUT_S)  # {"ready": true} once torch is imported
        except ForkServerError as exc:
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
            raise ForkServerError(f"no answer within {timeout_s:g} s (exit code {self._proc.poll()}): {err}")
        return json.loads(line)

    def check(self, source: str, *, timeout_s: float, entry_point: str) -> ReferenceCheck:
        started = time.perf_counter()
        with Workspace(source) as ws:
            request = {
                "program": str(ws.program), "result": str(ws.result), "log": str(ws.log),
                "status": str(ws.status), "cwd": str(ws.folder), "entry_point": entry_point,
            }  # fmt: skip
            with self._lock:
                if not self.alive:
                    raise ForkServerError("server is gone")
                try:
                    self._proc.stdin.write((json.dumps(request) + "\n").encode())
                    self._proc.stdin.flush()
                except OSError as exc:
                    self.alive = False
                    raise ForkServerError(f"cannot send a request: {exc}") from exc
                pid = int(self._read_line(self.REPLY_TIMEOUT_S)["pid"])
            deadline = started + timeout_s
            timed_out = False
            while not ws.status.exists():
                if time.perf_counter() > deadline:
                    timed_out = True
                    break
                time.sleep(self.POLL_S)
            if timed_out:
                kill_group(pid)  # still unreaped, so the id cannot have been reused yet
                # The server reaps it and writes the status; wait briefly so the log is complete.
                grace = time.perf_counter() + 5.0
                while not ws.status.exists() and time.perf_counter() < grace:
                    time.sleep(self.POLL_S)
            status = read_json(ws.status) or {}
            return verdict(ws, status.get("returncode"), timed_out, timeout_s, time.perf_counter() - started)

    def close(self) -> None:
        """Closing stdin tells the server to kill what is left and exit; its group is killed regardless."""
        self.alive = False
        try:
            self._proc.stdin.close()
            self._proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        finally:
            kill_group(self._proc.pid)
            self._proc.wait()
            self._proc.stdout.close()
            self._tmp.cleanup()
