"""The family modules (elementwise, reduction, norm, softmax) through programs and task: the reference follows
the shipped-task format, and the real judge's verdict on one task per family (honest -> correct, flawed -> not
correct) under the CPU interpreter."""

import ast

from dataset_builder.synthetic.generate import generate_task
from dataset_builder.synthetic.task import FAMILIES


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
        pairs += [
            (task.reference, f"```python\n{task.solution}```"),
            (task.reference, f"```python\n{task.flawed}```"),
        ]
    with Evaluator(device="cpu", workers=2, seed_base=0) as ev:
        results = ev.evaluate_many(pairs, progress=False)
    for i, task in enumerate(tasks):
        honest, flawed = results[2 * i], results[2 * i + 1]
        assert honest.status.value == "correct", (task.key, honest.error)
        assert honest.shape_generalization.get("passed") is not False, (task.key, honest.shape_generalization)
        assert flawed.status.value not in ("correct", "hacked"), (task.key, flawed.status, task.flaw)
