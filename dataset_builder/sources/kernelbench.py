"""`kernelbench`: a folder of KernelBench-style problem files (`*.py` with Model / get_inputs /
get_init_inputs); the level comes from a `level<N>` folder name, the ops from the calls in the program."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..checks import content_uuid
from ..prompt import first_turn_messages
from .formats import ABILITY, Chunk, SourceError, SourceRow
from .planning import problem_files

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)", re.IGNORECASE)
_OP_ROOTS = {"torch", "nn", "F"}


def referenced_ops(reference: str) -> list[str]:
    """Sorted dotted names of torch / nn / F callables the program calls (`extra_info.ops` for files)."""
    try:
        tree = ast.parse(reference)
    except (SyntaxError, ValueError):
        return []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            parts = []
            target = node.func
            while isinstance(target, ast.Attribute):
                parts.append(target.attr)
                target = target.value
            if isinstance(target, ast.Name) and target.id in _OP_ROOTS and parts:
                found.add(".".join([target.id, *reversed(parts)]))
    return sorted(found)


def kernelbench_rows(chunk: Chunk, template_path: str | None) -> list[SourceRow]:
    folder = Path(chunk.path)
    rows = []
    for file in problem_files(folder)[chunk.start : chunk.stop]:
        where = str(file)
        try:
            reference = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        level = _LEVEL_DIR.search(str(file.relative_to(folder.parent)))
        rows.append(
            SourceRow(
                where,
                {
                    "data_source": "kernelbench",
                    "prompt": first_turn_messages(reference, template_path),
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": reference},
                    "extra_info": {
                        "entry_point": "Model",
                        "level": level.group(1) if level else "",
                        "module_name": file.stem,
                        "ops": referenced_ops(reference),
                        "original_prompt": [],
                        "repo_name": folder.name,
                        "type": "kernelbench",
                        "uuid": content_uuid("kernelbench", reference),
                    },
                },
            )
        )
    return rows
