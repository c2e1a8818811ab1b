"""Error text both processes share: an exception with its traceback cut to a bounded size, and the marks of a
failure that is the Triton interpreter's (a gap), not the candidate's."""

from __future__ import annotations

import traceback


def format_exception(prefix: str, exc: BaseException, limit_chars: int = 3000) -> str:
    """``prefix: Type: message`` and the traceback, its middle cut to keep about ``limit_chars`` (judge and runner)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > limit_chars:
        text = text[:800] + "\n...\n" + text[-(limit_chars - 805) :]
    return f"{prefix}: {type(exc).__name__}: {exc}\n{text}"


# (text in an error, what the interpreter lacks): failures that are the interpreter's, not the candidate's
INTERPRETER_GAP_MARKERS = (
    (
        "has no implementation under the Triton interpreter",
        "a libdevice function without an interpreter version",
    ),
    ("not supported in interpreter mode", "an extern / inline-asm call (no interpreter version)"),
    ("0 active drivers", "a GPU driver API (no driver under the interpreter)"),
)


def interpreter_gap(error: str | None) -> str | None:
    """Pure: what the interpreter lacks and the error line that says so, when ``error`` (an interpreter-mode
    failure's text) is an interpreter gap; else None."""
    for marker, missing in INTERPRETER_GAP_MARKERS:
        if error and marker in error:
            line = next(line.strip() for line in error.splitlines() if marker in line)
            return f"{missing}: {line[-300:]}"
    return None
