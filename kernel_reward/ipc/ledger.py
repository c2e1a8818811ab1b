"""The launch ledger's wire, as the judge reads it: the lines CUPTI's records become in the runner
(``runner/native/launch_ledger.c``), read from a descriptor only the judge and the ledger's C code hold.

The candidate shares the runner's process, so it can in principle write to that descriptor too: every line is
parsed defensively (a malformed line is counted, never trusted), and the judge decides which kernels are the
candidate's own from its own reading of the source (``screen.static_checks.triton_function_names``).
"""

from __future__ import annotations

import dataclasses
import os
import select
import threading
import time
from dataclasses import dataclass, field

MAX_NAME_CHARS = 900  # what the C side writes at most


@dataclass(frozen=True)
class KernelRecord:
    """One kernel as CUPTI saw it run: its name, GPU start and end (ns, CUPTI's clock), correlation and stream."""

    name: str
    start_ns: int
    end_ns: int
    correlation: int
    stream: int

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass
class LedgerChunk:
    """The kernels recorded between two flush markers, and what could not be read."""

    marker: int | None = None  # the flush that ended it; None while still open
    kernels: list[KernelRecord] = field(default_factory=list)
    dropped: int = 0  # records CUPTI itself lost
    malformed: int = 0  # lines that are not the C side's (written by someone else, or cut)
    overflow_bytes: int = 0  # past MAX_LEDGER_BYTES: read and counted, not kept

    def then(self, later: LedgerChunk) -> LedgerChunk:
        """Pure: this window and the ``later`` one right after it, as one window ending on ``later``'s marker."""
        return LedgerChunk(
            later.marker,
            self.kernels + later.kernels,
            self.dropped + later.dropped,
            self.malformed + later.malformed,
            self.overflow_bytes + later.overflow_bytes,
        )


def parse(text: str) -> list[LedgerChunk]:
    """Pure: the ledger's lines as chunks, one per flush marker, the last one open when the text does not end on a
    marker. Never raises on bad input: a line that is not exactly a kernel, marker or drop line counts as
    malformed."""
    chunks = [LedgerChunk()]
    for line in text.split("\n"):
        if not line:
            continue
        fields = line.split("\t")
        current = chunks[-1]
        if fields[0] == "K" and len(fields) == 6 and len(fields[1]) <= MAX_NAME_CHARS:
            numbers = _naturals(fields[2:])
            if numbers is not None and numbers[0] <= numbers[1]:
                current.kernels.append(KernelRecord(fields[1], *numbers))
                continue
        elif fields[0] == "M" and len(fields) == 2 and (marker := _naturals(fields[1:])) is not None:
            current.marker = marker[0]
            chunks.append(LedgerChunk())
            continue
        elif fields[0] == "D" and len(fields) == 2 and (dropped := _naturals(fields[1:])) is not None:
            current.dropped += dropped[0]
            continue
        current.malformed += 1
    if not chunks[-1].kernels and not chunks[-1].dropped and not chunks[-1].malformed:
        chunks.pop()  # nothing after the last marker
    return chunks


def _naturals(fields: list[str]) -> list[int] | None:
    if not all(field.isascii() and field.isdigit() and len(field) <= 20 for field in fields):
        return None
    return [int(field) for field in fields]


MAX_LEDGER_BYTES = 256 * 1024 * 1024  # held between two takes at most; past it the rest is counted, not kept


class LedgerReader:
    """The judge's end of the ledger's pipe. Once ``start``ed, a daemon thread drains it (a full pipe would stall
    CUPTI's thread, and with it the runner); ``take(marker)`` returns everything recorded since the previous take,
    once the line of ``marker`` (a number the judge drew) has arrived. A marker line that is not the one awaited
    counts as malformed: only the judge's draw ends a chunk. The thread starts only when asked (or at the first
    take) because a judge that still has to enter its own namespaces must be single-threaded then."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = bytearray()
        self._overflow = 0
        self._carry = b""  # past the cap: the partial line read last
        self._closed = False
        self._stop = threading.Event()
        self._arrived = threading.Condition()
        self._thread = threading.Thread(target=self._drain, name="launch-ledger", daemon=True)

    def start(self) -> None:
        """Start draining (once; later calls do nothing)."""
        if self._thread.ident is None and not self._stop.is_set():
            self._thread.start()

    def _drain(self) -> None:
        """The thread's loop; it alone closes the descriptor (closed under a blocked read, its number could be
        reused by another pipe, whose data this thread would then take)."""
        try:
            while not self._stop.is_set():
                if not select.select([self._fd], [], [], 0.2)[0]:
                    continue
                if not self._receive():
                    return
        finally:
            os.close(self._fd)
            with self._arrived:
                self._closed = True
                self._arrived.notify_all()

    def _receive(self) -> bool:
        """One read into the pending bytes; False at the end of the pipe."""
        try:
            data = os.read(self._fd, 1 << 16)
        except OSError:
            data = b""
        if not data:
            return False
        with self._arrived:
            if self._overflow or len(self._pending) + len(data) > MAX_LEDGER_BYTES:
                self._keep_markers_only(data)
            else:
                self._pending += data
            self._arrived.notify_all()
        return True

    def _keep_markers_only(self, data: bytes) -> None:
        """Past the cap: only marker lines are kept (a take must still find its marker), the rest is counted."""
        if not self._overflow:  # the last, partial line goes on with this data
            cut = self._pending.rfind(b"\n") + 1
            self._carry, self._pending = bytes(self._pending[cut:]), self._pending[:cut]
        lines = (self._carry + data).split(b"\n")
        self._carry = lines.pop()
        for line in lines:
            if line.startswith(b"M\t"):
                self._pending += line + b"\n"
            else:
                self._overflow += len(line) + 1

    def take(self, marker: int, timeout_s: float) -> LedgerChunk:
        """The records since the previous take, up to the line ``M <marker>``; raises ``LedgerMissing`` when that
        line does not come within ``timeout_s`` (the ledger stopped, or the runner never flushed)."""
        self.start()
        line = f"M\t{marker}\n".encode()
        deadline = time.monotonic() + timeout_s
        scanned = 0  # what was searched already (each wake looks only at what arrived since)
        with self._arrived:
            while (end := self._find_line(line, scanned)) < 0:
                scanned = max(len(self._pending) - len(line), 0)
                left = deadline - time.monotonic()
                if self._closed or left <= 0:
                    raise LedgerMissing(
                        f"the ledger's marker {marker} did not arrive"
                        + (" (its pipe was closed)" if self._closed else f" within {timeout_s:g} s")
                    )
                self._arrived.wait(left)
            text = bytes(self._pending[:end]).decode("utf-8", errors="replace")
            del self._pending[: end + len(line)]
            overflow = self._overflow
            if overflow and not self._pending:  # back under the cap: the partial line is data again
                self._overflow, self._pending, self._carry = 0, bytearray(self._carry), b""
        chunk = LedgerChunk(marker, malformed=int(overflow > 0), overflow_bytes=overflow)
        for part in parse(text):  # any marker inside is not the judge's: its chunk's records still count
            part.malformed += part.marker is not None
            chunk = chunk.then(dataclasses.replace(part, marker=marker))
        return chunk

    def _find_line(self, line: bytes, start: int) -> int:
        """Where ``line`` starts a line of the pending bytes at or after ``start``, or -1."""
        index = start
        while (index := self._pending.find(line, index)) >= 0:
            if index == 0 or self._pending[index - 1] == ord("\n"):
                return index
            index += 1
        return -1

    def close(self) -> None:
        """Stop reading without waiting: the thread closes the descriptor at its next poll (0.2 s at most) or at
        the end of the pipe, whichever comes first; a reader never started closes it here."""
        self._stop.set()
        if self._thread.ident is None:
            os.close(self._fd)


class LedgerMissing(RuntimeError):
    """A marker the judge asked for never arrived on the ledger's pipe."""


# runner.selftest's kernel: run after the ledger starts, before any candidate
KNOWN_ANSWER_KERNEL = "_known_answer_add"
