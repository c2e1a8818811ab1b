"""synthetic.generate: determinism, distinctness, every family and variant, argument errors."""

import pytest

from dataset_builder.synthetic.generate import generate_task, generate_tasks
from dataset_builder.synthetic.task import FAMILIES, VARIANTS


def test_generation_is_deterministic_and_seed_dependent():
    first = generate_tasks(40, seed=7)
    again = generate_tasks(40, seed=7)
    other = generate_tasks(40, seed=8)
    assert first == again
    assert [t.uuid for t in first] != [t.uuid for t in other]
    assert generate_task("norm", 11) == generate_task("norm", 11)


def test_hundreds_of_distinct_tasks_every_family_and_variant():
    tasks = generate_tasks(800, seed=0)
    assert len({t.uuid for t in tasks}) == 800
    assert len({t.reference for t in tasks}) == 800
    assert {t.family for t in tasks} == set(FAMILIES)
    assert {t.key for t in tasks} == {f"{f}/{v}" for f, vs in VARIANTS.items() for v in vs}


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown synthetic family 'conv'"):
        generate_task("conv", 0)
    with pytest.raises(ValueError, match="count must be >= 0"):
        generate_tasks(-1)
