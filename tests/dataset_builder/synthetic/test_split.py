"""synthetic.split: held-out tasks by family/variant key, disjoint from training; unknown names refused."""

import pytest

from dataset_builder.synthetic.generate import generate_tasks
from dataset_builder.synthetic.split import DEFAULT_HELD_OUT, split_keys, split_tasks


def test_split_is_by_family_variant_and_disjoint():
    tasks = generate_tasks(200, seed=1)
    split = split_tasks(tasks)
    train_keys = {t.key for t in split.train}
    held_keys = {t.key for t in split.held_out}
    assert train_keys and held_keys and not train_keys & held_keys
    assert held_keys == set(DEFAULT_HELD_OUT)
    assert {t.uuid for t in split.train}.isdisjoint(t.uuid for t in split.held_out)
    assert len(split.train) + len(split.held_out) == len(tasks)
    whole = split_tasks(tasks, held_out=["softmax"])  # a whole family held out
    assert {t.family for t in whole.held_out} == {"softmax"}
    assert "softmax" not in {t.family for t in whole.train}


@pytest.mark.parametrize("bad", ["conv", "norm/batch_norm", ""])
def test_unknown_held_out_names_are_refused(bad):
    with pytest.raises(ValueError, match="unknown held-out name"):
        split_keys([bad])
