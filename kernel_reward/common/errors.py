"""Error text both processes share: an exception with its traceback cut to a bounded size."""

from __future__ import annotations

import traceback


def format_exception(prefix: str, exc: BaseException, limit_chars: int = 3000) -> str:
    """``prefix: Type: message`` and the traceback, its middle cut to keep about ``limit_chars`` (judge and runner)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > limit_chars:
        text = text[:800] + "\n...\n" + text[-(limit_chars - 805) :]
    return f"{prefix}: {type(exc).__name__}: {exc}\n{text}"
