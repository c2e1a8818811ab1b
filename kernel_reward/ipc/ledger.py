"""The launch ledger's wire, as the judge reads it: the lines CUPTI's records become in the runner
(``runner/native/launch_ledger.c``), read from a descriptor only the judge and the ledger's C code hold.

The candidate shares the runner's process, so it can in principle write to that descriptor too: every line is
parsed defensively (a malformed line is counted, never trusted), and the judge decides which kernels are the
candidate's own from its own reading of the source (``screen.static_checks.triton_function_names``).
"""

from __future__ import annotations

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
