"""A program's size constants, read and rewritten: the one implementation the reward and the task set share.

A KernelBench-style program is written around module-level UPPER_CASE integer literals (``BATCH = 16``,
``DIM: int = 1024``). ``size_constants`` reads them; ``resize_source`` rewrites chosen ones in place and leaves every
other byte alone, so the result is the same program at other sizes. The shipped task set builds its ``small``
preset with it; the reward's shape-generalisation check (``shapes``) picks new sizes with ``scaled_sizes``.
Stdlib only.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

# Constants that are structure rather than size: changing them changes what the task computes.
STRUCTURAL = re.compile(
    r"KERNEL|STRIDE|PAD|DILATION|GROUP|HEAD|LAYER|AXIS|DIM_IDX|REDUCE|EPS|SEED|ORDER|NUM_CLASSES"
)


def size_constants(source: str) -> dict[str, int]:
    """The module-level ``NAME = <int literal>`` assignments of a program (UPPER_CASE names only).

    Raises:
        ValueError: ``source`` does not parse, assigns one of the names more than once at module level, or
            writes a constant's literal over several lines.
    """
    return {name: value for name, (value, _node) in _int_constants(parse(source, "<source>")).items()}


def resize_source(source: str, overrides: Mapping[str, int]) -> str:
    """Rewrite module-level integer constants of a program; everything else stays byte-for-byte the same.

    Args:
        source: a program with module-level assignments such as ``BATCH = 128`` (or ``BATCH: int = 128``).
        overrides: new values, e.g. ``{"BATCH": 4}``.

    Raises:
        KeyError: a name in ``overrides`` is not a module-level integer constant of ``source`` (the message
            lists the constants that are).
        TypeError: a new value is not an ``int``.
        ValueError: as ``size_constants``.
    """
    for name, value in overrides.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"new value for {name!r} must be an int, got {type(value).__name__} {value!r}")
    constants = _int_constants(parse(source, "<source>"))
    missing = sorted(set(overrides) - set(constants))
    if missing:
        raise KeyError(
            f"constant(s) {missing} not found as module-level integer assignments; "
            f"the program defines {sorted(constants)}"
        )
    lines = source.splitlines(keepends=True)
    # Splice from the last edit backwards so earlier offsets stay valid. ast column offsets count UTF-8 bytes.
    edits = sorted(
        ((constants[n][1], v) for n, v in overrides.items()), key=lambda e: (e[0].lineno, e[0].col_offset)
    )
    for node, value in reversed(edits):
        row = node.lineno - 1
        raw = lines[row].encode("utf-8")
        raw = raw[: node.col_offset] + str(value).encode("utf-8") + raw[node.end_col_offset :]
        lines[row] = raw.decode("utf-8")
    return "".join(lines)


def scaled_sizes(source: str, scale: float, *, make_odd: bool) -> dict[str, tuple[int, int]]:
    """Pure policy: {name: (old, new)} for the size constants of ``source`` (not the structural ones, values of at
    least 2) multiplied by ``scale``; ``make_odd`` moves an even result above 2 down to odd. Unchanged sizes are
    left out. Raises ValueError as ``size_constants``."""
    changes: dict[str, tuple[int, int]] = {}
    for name, value in size_constants(source).items():
        if STRUCTURAL.search(name) or value < 2:
            continue
        new = max(1, round(value * scale))
        if make_odd and new > 2 and new % 2 == 0:
            new -= 1
        if new != value:
            changes[name] = (value, new)
    return changes


def parse(source: str, where: str) -> ast.Module:
    """``ast.parse`` whose failure is a ValueError naming ``where`` and the line."""
    try:
        return ast.parse(source, filename=where)
    except SyntaxError as exc:
        raise ValueError(f"{where}: does not parse: {exc.msg} (line {exc.lineno})") from exc


def assigned_name(stmt: ast.stmt) -> str | None:
    """The single plain name a module-level statement assigns, if it is such an assignment."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id
    return None


def _int_constants(tree: ast.Module) -> dict[str, tuple[int, ast.Constant]]:
    """UPPER_CASE module-level names bound to an int literal -> (value, the literal's node)."""
    found: dict[str, tuple[int, ast.Constant]] = {}
    seen: set[str] = set()
    for stmt in tree.body:
        name = assigned_name(stmt)
        if name is None:
            continue
        value = stmt.value
        is_int = (
            name.isupper()
            and isinstance(value, ast.Constant)
            and isinstance(value.value, int)
            and not isinstance(value.value, bool)
        )
        if name in seen and (is_int or name in found):
            raise ValueError(f"constant {name!r} is assigned more than once at module level")
        seen.add(name)
        if is_int:
            if value.lineno != value.end_lineno:
                raise ValueError(f"constant {name!r} spans several lines; write it on one line")
            found[name] = (value.value, value)
    return found
