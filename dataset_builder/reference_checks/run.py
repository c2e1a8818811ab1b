"""Check reference programs: ``check_reference`` (one, in a fresh interpreter) and ``check_references`` (many,
``num_workers`` at a time, each forked from a warm server by default). Results in input order."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed

from .child import CHILD_FILE
from .fork_server import ForkServer, ForkServerError
from .isolation import Workspace, run_child
from .outcome import verdict
from .verdicts import ReferenceCheck

logger = logging.getLogger(__name__)


def check_reference(source: str, *, timeout_s: float = 60.0, entry_point: str = "Model") -> ReferenceCheck:
    """Run one reference program on CPU in a fresh child process and report its problems.

    Args:
        source: the complete program (``entry_point`` class, ``get_inputs``, ``get_init_inputs``).
        timeout_s: wall-clock budget for the whole child (interpreter start and torch import included).
        entry_point: name of the ``nn.Module`` class to build.
    """
    _check_arguments(timeout_s, entry_point)
    started = time.perf_counter()
    with Workspace(source) as ws:
        argv = [sys.executable, "-I", CHILD_FILE, "--child", str(ws.program), str(ws.result), entry_point]
        returncode, timed_out = run_child(argv, cwd=ws.folder, log=ws.log, timeout_s=timeout_s)
        return verdict(ws, returncode, timed_out, timeout_s, time.perf_counter() - started)


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
    from tqdm.auto import tqdm  # lazy: importing this package stays standard-library only

    programs = list(sources)
    server = ForkServer.start() if warm and programs else None

    def one(source: str) -> ReferenceCheck:
        if server is not None and server.alive:
            try:
                return server.check(source, timeout_s=timeout_s, entry_point=entry_point)
            except ForkServerError as exc:
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


def _check_arguments(timeout_s: float, entry_point: str) -> None:
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s}")
    if not entry_point.isidentifier():
        raise ValueError(f"entry_point must be a Python identifier, got {entry_point!r}")
