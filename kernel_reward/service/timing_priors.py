"""The pool's store of timing priors: the freshest baseline per task and device, handed to the next judge.

A judge that measured a task's timing baseline offers it (``timing.prior``); a judge of the same task asks for it
before it queues for the timing slot, and again once it holds it. The store keeps each entry for ``max_age_s``
seconds and ``max_uses`` hand-outs, then forgets it, so every baseline is re-measured at least that often.
Entries are opaque here (the service never imports the judge's clock): bounded JSON objects under a hex key,
validated again by the judge that takes one.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

MAX_PRIOR_BYTES = 256 * 1024
_KEY = re.compile(r"[0-9a-f]{64}")


@dataclass
class _Entry:
    prior: dict[str, Any]
    stored_at: float
    uses: int = 0


class PriorStore:
    """Thread-safe: the pool's slot threads answer their judges from one store."""

    def __init__(self, max_age_s: float, max_uses: int, clock: Any = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self.max_uses = max_uses
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()
        self.handed_out = 0
        self.stored = 0

    def get(self, key: Any) -> dict[str, Any] | None:
        """The entry for ``key`` with its age and use count added, or None (unknown, stale, used up, disabled)."""
        if not isinstance(key, str) or self.max_uses <= 0:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            age = self.clock() - entry.stored_at
            if age > self.max_age_s or entry.uses >= self.max_uses:
                del self._entries[key]
                return None
            entry.uses += 1
            self.handed_out += 1
            return {**entry.prior, "age_s": round(age, 3), "uses": entry.uses}

    def put(self, key: Any, prior: Any) -> bool:
        """Keep ``prior`` under ``key`` (replacing any older one); False, keeping nothing, when either is malformed
        or the prior is over ``MAX_PRIOR_BYTES`` as JSON."""
        if not isinstance(key, str) or not _KEY.fullmatch(key) or not isinstance(prior, dict):
            return False
        try:
            size = len(json.dumps(prior, allow_nan=False))
        except (TypeError, ValueError):
            return False
        if size > MAX_PRIOR_BYTES or self.max_uses <= 0:
            return False
        with self._lock:
            self._entries[key] = _Entry(prior, self.clock())
            self.stored += 1
        return True
