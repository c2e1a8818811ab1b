"""Resume cache of an evaluation run: finished turns keyed by a hash of what determines them.

A key hashes (task, model, sampling, turn history, evaluator settings) as canonical JSON, so a re-run with the
same inputs finds every finished turn and recomputes nothing, while a change to any of them (another model,
temperature, device, an earlier turn that came out differently) misses. Entries are appended to a JSONL file
and flushed one by one, so a run that is killed keeps everything it finished.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


def cache_key(**parts: Any) -> str:
    """SHA-256 of the canonical JSON of ``parts`` (keys sorted, no whitespace)."""
    payload = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ResultCache:
    """Append-only JSONL store of ``{"key": ..., "value": ...}`` entries; later entries win."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._entries: dict[str, Any] = {}
        if self.path.exists():
            with self.path.open(encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if not line.strip():
                        continue
                    try:
                        entry = json.loads(line)
                        self._entries[entry["key"]] = entry["value"]
                    except (json.JSONDecodeError, KeyError, TypeError):
                        # A run killed mid-write leaves at most a truncated last line; that turn is redone.
                        logger.warning(
                            "%s:%d: unreadable cache entry skipped (it will be recomputed)", self.path, number
                        )
            logger.info("resume cache %s: %d finished turns", self.path, len(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def get(self, key: str) -> Any | None:
        return self._entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self._entries[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"key": key, "value": value}) + "\n")
            handle.flush()
