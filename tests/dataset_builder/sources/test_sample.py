"""sources.sample: rows from the task set shipped in dataset_builder.tasks, at both presets."""

import json

from dataset_builder.checks import static_problems
from dataset_builder.sources.formats import SourceFormat

from .support import read_all


def test_sample_rows_come_from_the_shipped_tasks():
    from dataset_builder.tasks import load_tasks, task_names

    rows = read_all(SourceFormat.SAMPLE, None, preset="small", chunk_rows=7)
    assert [r.row["extra_info"]["module_name"] for r in rows] == task_names()
    tasks = {t.name: t for t in load_tasks(preset="small")}
    for row in rows:
        task = tasks[row.row["extra_info"]["module_name"]]
        assert row.reference == task.source
        assert row.row["extra_info"]["ops"] == list(task.ops)
        assert row.row["extra_info"]["level"] == task.level
        assert static_problems(row.reference) == []
    assert len({r.uuid for r in rows}) == len(rows)
    full = read_all(SourceFormat.SAMPLE, None, preset="full", chunk_rows=100)
    assert [r.reference for r in full] != [r.reference for r in rows]  # the presets differ in sizes only
    assert json.dumps([r.row["extra_info"]["module_name"] for r in full]) == json.dumps(task_names())
