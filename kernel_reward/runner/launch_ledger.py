"""The launch ledger's runner side: load the library ``ipc.ledger_build`` compiled (before the sandbox hides its
file), start it on a descriptor the judge opened once the CUDA context exists and before any candidate code, and
flush it with the judge's marker when asked. From then on CUPTI writes one line per kernel the process runs
(``ipc.ledger`` reads them). Started by runners of a pool with ``PoolConfig.launch_ledger`` (and one-shot judges
given ``--launch-ledger``); ``benchmarks/launch_ledger_probe.py`` measures what it costs and whether every launch
arrives.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

from kernel_reward.ipc.ledger_build import LedgerUnavailable

__all__ = ["LaunchLedger", "LedgerUnavailable"]


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
