"""Code extraction from a model completion (background §1).

Rule: a fenced block tagged ``answer`` wins (the last one, if several); otherwise the LAST fenced code block;
no fenced block at all -> None (the caller reports ``format_error``). Text that has no fence but parses as a
Python module with at least one class or function definition is accepted as plain code, so
``evaluate(reference, code)`` works with code that was never wrapped in a completion (prose does not parse). Text
that does not parse but defines ``ModelNew`` at the start of a line (and opens no fence) is plain code with a syntax
error: the static checks then report it as a ``compile_error`` with its line, not as a completion without code.
"""

from __future__ import annotations

import ast
import re

# An opening fence (``` or ~~~, 3+), an optional info string, the body, and a matching closing fence.
_FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """All fenced blocks as (language tag lower-cased, body), in order of appearance."""
    return [(m.group("info").strip().split(" ")[0].lower(), m.group("body")) for m in _FENCE.finditer(text)]


def extract_code(completion: str) -> str | None:
    """The code to evaluate, or None when the completion holds no code block."""
    blocks = fenced_blocks(completion)
    answers = [body for tag, body in blocks if tag == "answer"]
    if answers:
        return answers[-1]
    if blocks:
        return blocks[-1][1]
    if _looks_like_plain_code(completion):
        return completion
    return None


_MODEL_NEW_LINE = re.compile(r"^class[ \t]+ModelNew\b", re.MULTILINE)
_FENCE_OPENER = re.compile(r"^(`{3,}|~{3,})", re.MULTILINE)


def _looks_like_plain_code(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        # an unclosed fence is a completion cut short (format_error), not a file with a syntax error
        return _MODEL_NEW_LINE.search(text) is not None and _FENCE_OPENER.search(text) is None
    return any(isinstance(node, ast.ClassDef | ast.FunctionDef) for node in tree.body)
