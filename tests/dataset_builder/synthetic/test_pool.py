"""The RL pool's candidates (dataset_builder.synthetic.pool): fresh tasks of the trained variants, in draw order."""

import pytest

from dataset_builder.synthetic.generate import generate_tasks
from dataset_builder.synthetic.pool import rl_pool_candidates
from dataset_builder.synthetic.split import DEFAULT_HELD_OUT, split_tasks


def test_candidates_are_fresh_tasks_of_trained_variants_and_seen_ones_have_taught_answers():
    sft = generate_tasks(24, seed=0)
    split = split_tasks(sft, DEFAULT_HELD_OUT)
    held = {task.uuid for task in split.held_out}
    trained_keys = {task.key for task in split.train}
    taught = {task.solution for task in split.train}
    anything = rl_pool_candidates(sft, held, 6, seed=0)
    assert anything == rl_pool_candidates(sft, held, 6, seed=0)  # pure
    assert anything and all(t.key in trained_keys for t in anything)
    assert not {t.uuid for t in anything} & {t.uuid for t in sft}
    assert any(t.solution not in taught for t in anything)
    seen = rl_pool_candidates(sft, held, 6, seed=0, answers="seen")
    assert seen and all(t.solution in taught for t in seen)
    with pytest.raises(ValueError, match="'seen' or 'any'"):
        rl_pool_candidates(sft, held, 6, seed=0, answers="some")
