"""Building the launch ledger (``runner/native/launch_ledger.c``) against the CUPTI that Triton's wheel ships (its
headers and ``libcupti.so``, under ``triton/backends/nvidia``): trusted work, done once by the judge's side (a pool's
zygote, a one-shot judge) before any runner starts; the runner only loads the result (``runner.launch_ledger``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "runner" / "native" / "launch_ledger.c"


def default_cache_dir() -> Path:
    """Where a one-shot judge keeps the built ledger (a pool builds it into its own state directory)."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kernel_reward" / "launch-ledger"


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


def build_or_reason(cache_dir: Path) -> tuple[Path | None, str | None]:
    """The built ledger and None, or None and the reason a runner's ``ledger_state`` gives ("not built: ...")."""
    try:
        return build(cache_dir), None
    except LedgerUnavailable as exc:
        return None, f"not built: {exc}"


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
