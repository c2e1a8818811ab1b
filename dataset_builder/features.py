"""The one declared schema of a dataset row (`dataset_builder.FEATURES`) and the helpers around it.

The layout follows `hkust-nlp/drkernel-rl-data` (verl's RL row schema, background §1) with one deliberate change:
`extra_info.ops` is a typed list of strings instead of a JSON-encoded string. `parse_ops` accepts both forms
so upstream rows still read; `to_upstream_row` writes the JSON-string form back for a lossless round trip.
"""

from __future__ import annotations

import json
from typing import Any

from datasets import Features, List, Value

_MESSAGE = {"role": Value("string"), "content": Value("string")}

FEATURES = Features(
    {
        "data_source": Value("string"),
        "prompt": List(_MESSAGE),
        "ability": Value("string"),
        "reward_model": {"style": Value("string"), "ground_truth": Value("string")},
        "extra_info": {
            "entry_point": Value("string"),
            "level": Value("string"),
            "module_name": Value("string"),
            "ops": List(Value("string")),
            "original_prompt": List(_MESSAGE),
            "repo_name": Value("string"),
            "type": Value("string"),
            "uuid": Value("string"),
        },
    }
)

# Derived once from FEATURES (STYLE 11: declare the schema once, always build with it).
ARROW_SCHEMA = FEATURES.arrow_schema

TOP_LEVEL_COLUMNS: tuple[str, ...] = tuple(FEATURES)
EXTRA_INFO_FIELDS: tuple[str, ...] = tuple(FEATURES["extra_info"])
REWARD_MODEL_FIELDS: tuple[str, ...] = tuple(FEATURES["reward_model"])


class OpsFormatError(ValueError):
    """`extra_info.ops` is neither a list of strings nor a JSON string encoding one."""


def parse_ops(value: Any) -> list[str]:
    """Return `ops` as a list of strings, from a list or from upstream's JSON-encoded string.

    None and the empty string mean "no ops recorded" and give []; anything else that is not a list of
    strings raises OpsFormatError saying what was found.
    """
    if value is None:
        return []
    if isinstance(value, str):
        if not value.strip():
            return []
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise OpsFormatError(f"not valid JSON ({exc.msg} at char {exc.pos}): {value[:80]!r}") from exc
    if not isinstance(value, list | tuple):
        raise OpsFormatError(f"expected a list of strings, found {type(value).__name__}: {str(value)[:80]!r}")
    bad = [item for item in value if not isinstance(item, str)]
    if bad:
        raise OpsFormatError(f"expected a list of strings, found item {bad[0]!r} ({type(bad[0]).__name__})")
    return list(value)


def to_upstream_row(row: dict[str, Any]) -> dict[str, Any]:
    """Inverse of the drkernel conversion: the same row with `extra_info.ops` JSON-encoded as upstream."""
    extra = dict(row["extra_info"])
    extra["ops"] = json.dumps(extra["ops"])
    return {**row, "extra_info": extra}
