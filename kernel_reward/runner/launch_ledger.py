"""The launch ledger's runner side: build ``native/launch_ledger.c`` against the CUPTI that Triton's wheel ships
(its headers and ``libcupti.so``, under ``triton/backends/nvidia``), load it, and start it on a descriptor the
judge opened, before any candidate code exists. From then on CUPTI writes one line per kernel the process runs
(``ipc.ledger`` reads them); the runner only asks for a flush with a marker after each message.

Not wired into the evaluation yet: ``benchmarks/launch_ledger_probe.py`` measures what it costs and whether every
launch arrives (docs/security.md, "What still rests on the runner's word").
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "native" / "launch_ledger.c"


class LedgerUnavailable(RuntimeError):
    """The ledger cannot be built or started here (no compiler, no CUPTI, no GPU driver), with the reason."""


def cupti_paths() -> tuple[Path, Path]:
    """The CUPTI headers and library directory of the installed Triton wheel."""
    try:
        import triton
    except ImportError as exc:
        raise LedgerUnavailable(
            "triton is not installed: its wheel carries the CUPTI the ledger uses"
        ) from exc
    nvidia = Path(triton.__file__).resolve().parent / "backends" / "nvidia"
    include, library = nvidia / "include", nvidia / "lib" / "cupti"
    if not (include / "cupti_activity.h").is_file() or not (library / "libcupti.so").exists():
        raise LedgerUnavailable(f"no CUPTI headers and library under {nvidia}")
    return include, library


def build(cache_dir: Path) -> Path:
    """The compiled ledger for this source and this CUPTI, built once into ``cache_dir`` (renamed into place
    whole, so a crashed build never leaves a library that looks complete)."""
    include, library = cupti_paths()
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        raise LedgerUnavailable("no C compiler on PATH (set CC)")
    key = hashlib.sha256(SOURCE.read_bytes() + str(include).encode() + compiler.encode()).hexdigest()[:16]
    target = cache_dir / f"launch_ledger_{key}.so"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        partial = Path(tmp) / target.name
        command = [
            compiler, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", f"-I{include}", "-o", str(partial),
            str(SOURCE), f"-L{library}", "-lcupti", f"-Wl,-rpath,{library}",
        ]  # fmt: skip
        built = subprocess.run(command, capture_output=True, text=True, check=False)
        if built.returncode != 0:
            raise LedgerUnavailable(f"building the launch ledger failed: {built.stderr.strip()[:2000]}")
        os.replace(partial, target)
    return target


class LaunchLedger:
    """The loaded ledger: ``start(fd)`` once, then ``flush(marker)`` after each message."""

    def __init__(self, library: Path) -> None:
        self.lib = ctypes.CDLL(str(library))
        self.lib.ledger_start.argtypes = [ctypes.c_int]
        self.lib.ledger_flush.argtypes = [ctypes.c_ulonglong]
        self.lib.ledger_error.argtypes = [ctypes.c_int]
        self.lib.ledger_error.restype = ctypes.c_char_p

    def _check(self, code: int, what: str) -> None:
        if code == -1:
            raise LedgerUnavailable(f"{what}: writing to the judge's descriptor failed")
        if code != 0:
            raise LedgerUnavailable(f"{what}: {self.lib.ledger_error(code).decode()} (CUPTI error {code})")

    def start(self, fd: int) -> None:
        self._check(self.lib.ledger_start(fd), "starting CUPTI's kernel activity records")

    def flush(self, marker: int) -> None:
        self._check(self.lib.ledger_flush(marker), "flushing CUPTI's activity records")
