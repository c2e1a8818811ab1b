"""dataset_builder.synthetic: determinism, distinctness, the split, the task format, and the real judge's verdict
on one task per family (honest -> correct, flawed -> not correct) under the CPU interpreter."""

import ast

import pytest

from dataset_builder.synthetic import (
    DEFAULT_HELD_OUT,
    FAMILIES,
    VARIANTS,
    generate_task,
    generate_tasks,
    split_keys,
    split_tasks,
)


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


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown synthetic family 'conv'"):
        generate_task("conv", 0)
    with pytest.raises(ValueError, match="count must be >= 0"):
        generate_tasks(-1)


def test_reference_follows_the_shipped_task_format():
    from dataset_builder.tasks import resize_source, size_constants

    for family in FAMILIES:
        task = generate_task(family, 5)
        tree = ast.parse(task.reference)
        assert ast.get_docstring(tree)
        names = {getattr(node, "name", None) for node in tree.body}
        assert {"Model", "get_inputs", "get_init_inputs"} <= names
        sizes = size_constants(task.reference)
        assert sizes and all(name.isupper() for name in sizes)
        resize_source(task.reference, {name: 2 * value for name, value in sizes.items()})  # rewritable
        for program in (task.solution, task.flawed):
            tree = ast.parse(program)
            assert "ModelNew" in {getattr(node, "name", None) for node in tree.body}
            assert "@triton.jit" in program
        assert task.solution != task.flawed
        assert task.as_task().source == task.reference


def test_one_task_per_family_is_judged_as_expected_on_cpu():
    """Honest answers must be `correct`, flawed ones must not; the reference must run. ~8 evaluations."""
    from kernel_reward import Evaluator

    tasks = [generate_task(family, 2) for family in FAMILIES]
    pairs = []
    for task in tasks:
        pairs += [(task.reference, f"```python\n{task.solution}```"), (task.reference, f"```python\n{task.flawed}```")]
    with Evaluator(device="cpu", workers=2, seed_base=0) as ev:
        results = ev.evaluate_many(pairs, progress=False)
    for i, task in enumerate(tasks):
        honest, flawed = results[2 * i], results[2 * i + 1]
        assert honest.status.value == "correct", (task.key, honest.error)
        assert honest.shape_generalization.get("passed") is not False, (task.key, honest.shape_generalization)
        assert flawed.status.value not in ("correct", "hacked"), (task.key, flawed.status, task.flaw)
