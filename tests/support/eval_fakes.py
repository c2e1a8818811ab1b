"""Test helpers: a counting evaluator judged by marker words, and a tiny dataset folder writer."""

import json
from pathlib import Path
from typing import Any

from kernel_reward.result import EvalResult, Status

VERDICTS = {
    "HONEST": EvalResult(
        status=Status.CORRECT, compiled=True, correct=True, reward=1.0, feedback="fb: correct"
    ),
    "WRONG": EvalResult(status=Status.INCORRECT, compiled=True, feedback="fb: wrong"),
    "HACK": EvalResult(
        status=Status.HACKED, compiled=True, hacked=True, hack_reasons=["no_launch"], feedback="fb: hack"
    ),
}


class CountingEvaluator:
    """Judges a completion by a marker word; records every candidate it is asked to evaluate.

    Also a context manager, so it can stand in for ``kernel_reward.Evaluator`` in ``run_evaluation``.
    """

    def __init__(self):
        self.calls: list[tuple[str, str]] = []
        self.shared_batches = 0  # batches asked with share_identical=True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def make_request(self, reference, candidate, entry_point="Model", **options):
        return (reference, candidate)  # what kernel_reward.env.KernelEnvironment hands back to evaluate_many

    def evaluate_many(self, pairs, share_identical=False):
        self.calls.extend(pairs)
        self.shared_batches += share_identical
        out = []
        for _, completion in pairs:
            marker = next((m for m in VERDICTS if m in completion), None)
            out.append(
                VERDICTS[marker] if marker else EvalResult(status=Status.FORMAT_ERROR, feedback="fb: no code")
            )
        return out


def block(marker):
    return f"Here you go.\n```python\n# {marker}\nclass ModelNew: ...\n```"


def write_dataset(folder: Path, num_tasks: int) -> Path:
    """A dataset folder with DESIGN-shaped rows (only the fields the harness reads), loadable by load_dataset."""
    from datasets import Dataset

    rows = [
        {
            "data_source": "test",
            "prompt": [{"role": "user", "content": f"Optimise task {i}."}],
            "ability": "kernel_optimization",
            "reward_model": {"style": "rule", "ground_truth": f"# reference {i}"},
            "extra_info": {"uuid": f"task_{i}", "level": str(1 + i % 2), "entry_point": "Model"},
        }
        for i in range(num_tasks)
    ]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    Dataset.from_list(rows).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    return folder


def write_shipped_dataset(folder: Path, names: list[str]) -> Path:
    """A dataset folder holding shipped tasks at the ``small`` preset (ids = task names)."""
    from datasets import Dataset

    from dataset_builder.prompt import first_turn_messages
    from dataset_builder.tasks import load_tasks

    rows = [
        {
            "data_source": "drkernel_sample",
            "prompt": first_turn_messages(task.source),
            "ability": "kernel_optimization",
            "reward_model": {"style": "rule", "ground_truth": task.source},
            "extra_info": {"uuid": task.name, "level": task.level, "entry_point": "Model"},
        }
        for task in load_tasks("small", names=names)
    ]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    Dataset.from_list(rows).to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
    return folder


def reply_json(handler: Any, payload: Any) -> None:
    """Answer an ``http.server`` request with ``payload`` as a 200 JSON response (the fake endpoints' reply)."""
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
