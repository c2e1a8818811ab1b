"""Reference-time cache keyed by (reference hash, device name, timing settings).

A reference program's time on a given GPU model does not change between candidates, so callers (schedulers,
reports, a harness comparing many candidates of one task) can look it up instead of timing it again. The speedup
in an ``EvalResult`` is still the worker's interleaved paired measurement (reference and candidate timed together
in one process): the cache never replaces that final word, it only remembers what those measurements saw.

Entries keep the raw-sample summary (``TimingStats``) and how many measurements were merged; the file form is
JSON so a cache can be shared between runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, TimingStats

# EvalOptions fields that change a reference's measured time; everything else (tolerances, rewards) does not.
TIMING_FIELDS = ("timing_budget_ms", "warmup_calls", "min_timed_calls", "max_timed_calls", "l2_flush_mb", "allow_tf32")


def reference_key(reference_code: str, device_name: str, options: EvalOptions) -> str:
    """Stable key: sha256 of the reference source (line endings and trailing blanks normalised), the device
    name (e.g. "NVIDIA H200") and the timing settings."""
    if not device_name:
        raise ValueError("reference_key: device_name must be a non-empty GPU name")
    code = "\n".join(line.rstrip() for line in reference_code.replace("\r\n", "\n").strip().splitlines())
    timing = {name: getattr(options, name) for name in TIMING_FIELDS}
    payload = json.dumps({"code": code, "device": device_name, "timing": timing}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclasses.dataclass
class CachedReference:
    stats: TimingStats
    measurements: int = 1


class ReferenceTimeCache:
    """Thread-safe map from ``reference_key`` to the latest reference timing; optionally persisted as JSON."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._entries: dict[str, CachedReference] = {}
        if self.path is not None and self.path.exists():
            raw = json.loads(self.path.read_text())
            self._entries = {k: CachedReference(TimingStats(**v["stats"]), v["measurements"]) for k, v in raw.items()}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, reference_code: str, device_name: str, options: EvalOptions) -> TimingStats | None:
        with self._lock:
            entry = self._entries.get(reference_key(reference_code, device_name, options))
            return entry.stats if entry else None

    def record(self, reference_code: str, options: EvalOptions, result: EvalResult) -> bool:
        """Remember the reference timing of a GPU result; returns False when the result carries none."""
        if not result.timing_available or result.reference_timing is None or not result.device or result.device == "cpu":
            return False
        key = reference_key(reference_code, result.device, options)
        with self._lock:
            previous = self._entries.get(key)
            self._entries[key] = CachedReference(result.reference_timing, (previous.measurements + 1) if previous else 1)
            self._save()
        return True

    def _save(self) -> None:
        if self.path is None:
            return
        data: dict[str, Any] = {k: {"stats": dataclasses.asdict(v.stats), "measurements": v.measurements}
                                for k, v in self._entries.items()}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.path)
