"""Parent side of running one program in a child process: its workspace, its environment, its wall clock.

Each check gets a fresh temporary folder holding the program, the child's result file, its output log (of
which only the tail is kept) and its exit status. A fresh child runs in its own session with stdin
``/dev/null``; the parent owns the wall clock and always ends with a kill of the child's whole process group.
Nothing here knows what the program computes.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from .child import OUTPUT_TAIL_BYTES, kill_group


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    # One thread per child: several checks run side by side on few cores, and one thread keeps CPU sums in a
    # fixed order.
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


class Workspace:
    """A fresh temporary folder holding one program, its result file, its output log and its exit status."""

    def __init__(self, source: str):
        self._tmp = tempfile.TemporaryDirectory(prefix="refcheck_")
        self.folder = Path(self._tmp.name)
        self.program = self.folder / "reference_program.py"
        self.result = self.folder / "result.json"
        self.log = self.folder / "output.log"
        self.status = self.folder / "status.json"  # written by the fork server once it reaped the child
        self.program.write_text(source, encoding="utf-8")

    def __enter__(self) -> Workspace:
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


def run_child(argv: list[str], *, cwd: Path, log: Path, timeout_s: float) -> tuple[int, bool]:
    """Run argv in its own session; returns (returncode, timed_out). Always kills the whole group at the end."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=child_env(),
            start_new_session=True,
        )  # fmt: skip
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            kill_group(proc.pid)  # the child leads its own group: no grandchild outlives the check
            proc.wait()
    return proc.returncode, timed_out


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
