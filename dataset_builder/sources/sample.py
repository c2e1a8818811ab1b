"""`sample`: the task set shipped in `dataset_builder.tasks`, at a size preset (`small` or `full`)."""

from __future__ import annotations

from ..checks import content_uuid
from ..prompt import first_turn_messages
from .formats import ABILITY, Chunk, SourceRow


def sample_rows(chunk: Chunk, template_path: str | None = None) -> list[SourceRow]:
    from ..tasks import load_tasks, task_names

    names = task_names()[chunk.start : chunk.stop]
    rows = []
    for task in load_tasks(preset=chunk.preset, names=names):
        rows.append(
            SourceRow(
                f"task {task.name} ({chunk.preset})",
                {
                    "data_source": "drkernel_rl_tasks",
                    "prompt": first_turn_messages(task.source, template_path),
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": task.source},
                    "extra_info": {
                        "entry_point": "Model",
                        "level": task.level,
                        "module_name": task.name,
                        "ops": list(task.ops),
                        "original_prompt": [],
                        "repo_name": "drkernel-rl",
                        "type": task.category,
                        "uuid": content_uuid("drkernel_rl", task.source),
                    },
                },
            )
        )
    return rows
