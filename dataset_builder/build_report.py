"""What a build read, kept and dropped: ``BuildReport`` and its ``DroppedRow`` entries (the builder fills it,
the dataset card and the CLI render it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from .checks import DropReason


@dataclass(frozen=True)
class DroppedRow:
    where: str
    uuid: str | None
    reasons: tuple[DropReason, ...]
    detail: str = ""

    @property
    def reason(self) -> DropReason:
        """The reason the row is counted under (the first found)."""
        return self.reasons[0]


@dataclass
class BuildReport:
    """What a build read, kept and dropped (each dropped row counted once, under its first reason)."""

    source: str
    format: str
    preset: str | None
    prompt_template: str
    rows_read: int = 0
    rows_kept: int = 0
    dropped: list[DroppedRow] = field(default_factory=list)
    reference_checks: bool = False
    shards: list[str] = field(default_factory=list)
    num_bytes: int = 0
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)  # scan / generate / write

    def dropped_by_reason(self) -> dict[str, int]:
        counts = Counter(row.reason.value for row in self.dropped)
        return {reason.value: counts[reason.value] for reason in DropReason if counts[reason.value]}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["dropped_by_reason"] = self.dropped_by_reason()
        return data

    def to_text(self, max_rows: int = 20) -> str:
        lines = [
            f"source: {self.source} (format {self.format}{f', preset {self.preset}' if self.preset else ''})",
            f"rows read: {self.rows_read}",
            f"rows kept: {self.rows_kept}",
            f"rows dropped: {len(self.dropped)}",
        ]
        lines += [f"  {reason}: {count}" for reason, count in self.dropped_by_reason().items()]
        if not self.reference_checks:
            lines.append("runtime reference checks: not run (--check-references to run them)")
        for row in self.dropped[:max_rows]:
            detail = f" - {row.detail}" if row.detail else ""
            lines.append(f"  dropped {row.where}: {', '.join(r.value for r in row.reasons)}{detail}")
        if len(self.dropped) > max_rows:
            lines.append(f"  ... and {len(self.dropped) - max_rows} more dropped rows")
        if self.shards:
            lines.append(f"shards: {len(self.shards)} ({self.num_bytes / 2**20:.1f} MiB of Arrow data)")
        phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in self.phase_seconds.items())
        lines.append(f"seconds: {self.seconds:.1f}{f' ({phases})' if phases else ''}")
        return "\n".join(lines)
