"""Field checks shared by the row formats: each returns the value or raises SourceError naming the row and
column."""

from __future__ import annotations

import json
from typing import Any

from ..features import OpsFormatError, parse_ops
from .formats import SourceError


def as_string(value: Any, where: str, column: str, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        found = "empty string" if isinstance(value, str) else type(value).__name__
        raise SourceError(f"{where}, column {column}: expected a non-empty string, found {found}")
    return value


def as_struct(value: Any, where: str, column: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SourceError(f"{where}, column {column}: expected a struct/object, found {type(value).__name__}")
    return value


def as_messages(value: Any, where: str, column: str, *, required: bool) -> list[dict[str, str]]:
    if value is None and not required:
        return []
    if isinstance(value, str):  # some exports JSON-encode nested columns
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{where}, column {column}: string is not a JSON list of messages") from exc
    if not isinstance(value, list) or (required and not value):
        raise SourceError(
            f"{where}, column {column}: expected a non-empty list of {{role, content}} messages"
        )
    messages = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise SourceError(
                f"{where}, column {column}[{index}]: expected exactly the keys role and content"
            )
        as_string(message["role"], where, f"{column}[{index}].role", required=True)
        as_string(message["content"], where, f"{column}[{index}].content", required=False)
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def as_ops(value: Any, where: str) -> list[str]:
    try:
        return parse_ops(value)
    except OpsFormatError as exc:
        raise SourceError(f"{where}, column extra_info.ops: {exc}") from exc


def check_exact_keys(record: dict[str, Any], expected: tuple[str, ...], where: str, prefix: str) -> None:
    if len(record) == len(expected) and all(k in record for k in expected):
        return
    missing = [k for k in expected if k not in record]
    extra = [k for k in record if k not in expected]
    if missing:
        raise SourceError(f"{where}: missing column {prefix}{missing[0]}")
    if extra:
        raise SourceError(
            f"{where}: unexpected column {prefix}{extra[0]} (drkernel rows are converted losslessly; "
            "use --format cudallm for rows in another layout)"
        )
