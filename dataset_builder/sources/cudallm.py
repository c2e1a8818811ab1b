"""`cudallm`: `ByteDance-Seed/cudaLLM-data`-style verl rows (CUDA prompt, reference in
`reward_model.ground_truth`). The Triton first-turn prompt is rebuilt from the reference; the upstream prompt
moves to `extra_info.original_prompt`."""

from __future__ import annotations

import logging
from typing import Any

from ..checks import content_uuid
from ..features import EXTRA_INFO_FIELDS
from ..prompt import first_turn_messages
from .fields import as_messages, as_ops, as_string, as_struct
from .formats import ABILITY, SourceError

logger = logging.getLogger(__name__)

_warned_fields: set[tuple[str, str]] = set()


def cudallm_row(record: dict[str, Any], where: str, template_path: str | None) -> dict[str, Any]:
    """verl row with a CUDA prompt -> FEATURES row with the Triton prompt rebuilt from the reference."""
    for column in ("prompt", "reward_model"):
        if column not in record:
            raise SourceError(f"{where}: missing column {column}")
    reward = as_struct(record["reward_model"], where, "reward_model")
    if "ground_truth" not in reward:
        raise SourceError(f"{where}: missing column reward_model.ground_truth")
    reference = as_string(reward["ground_truth"], where, "reward_model.ground_truth", required=True)
    original = as_messages(record["prompt"], where, "prompt", required=True)
    extra = as_struct(record.get("extra_info") or {}, where, "extra_info")
    ignored = sorted(set(extra) - set(EXTRA_INFO_FIELDS))
    file = where.rsplit(" ", 2)[0]
    for name in ignored:  # say once per file which upstream fields have no place in the schema
        if (file, name) not in _warned_fields:
            _warned_fields.add((file, name))
            logger.warning("%s: extra_info.%s has no column in the schema and is not kept", file, name)
    fields = {}
    for name in ("entry_point", "level", "module_name", "repo_name", "type", "uuid"):
        value = extra.get(name)
        if value is not None and not isinstance(value, str):
            value = str(value)  # cudaLLM exports sometimes store level / index as integers
        fields[name] = value
    return {
        "data_source": as_string(record.get("data_source"), where, "data_source", required=False)
        or "cuda_llm",
        "prompt": first_turn_messages(reference, template_path),
        "ability": as_string(record.get("ability"), where, "ability", required=False) or ABILITY,
        "reward_model": {"style": reward.get("style") or "rule", "ground_truth": reference},
        "extra_info": {
            "entry_point": fields["entry_point"] or "Model",
            "level": fields["level"] if fields["level"] is not None else "0",
            "module_name": fields["module_name"],
            "ops": as_ops(extra.get("ops"), where),
            "original_prompt": original,
            "repo_name": fields["repo_name"],
            "type": fields["type"],
            "uuid": fields["uuid"] or content_uuid("cuda_llm", reference),
        },
    }
