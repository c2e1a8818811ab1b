"""Line distance between programs and the nearest training answer (dataset_builder.synthetic.novelty)."""

import pytest

from dataset_builder.synthetic.generate import generate_tasks
from dataset_builder.synthetic.novelty import Nearest, line_distance, nearest_answer

BASE = "def f(x):\n    y = x + 1\n    return y\n"


def test_a_replaced_line_counts_once_and_blank_lines_do_not_count():
    assert line_distance(BASE, BASE) == 0
    assert line_distance(BASE, BASE.replace("x + 1", "x + 2")) == 1
    assert line_distance(BASE, BASE + "\n\n   \n") == 0  # blank lines and trailing spaces ignored
    assert line_distance(BASE, BASE.replace("    y", "  y")) == 1  # indentation is syntax
    added = BASE.replace("    return y", "    y = y * 2\n    y = y - 3\n    return y")
    assert line_distance(BASE, added) == line_distance(added, BASE) == 2


def test_the_nearest_answer_is_the_one_with_fewest_differing_lines():
    answers = {"far": "def g():\n    pass\n", "near": BASE.replace("x + 1", "x * 3"), "same": BASE}
    assert nearest_answer(BASE, answers) == Nearest("same", 0)
    del answers["same"]
    assert nearest_answer(BASE, answers) == Nearest("near", 1)
    with pytest.raises(ValueError, match="at least one"):
        nearest_answer(BASE, {})


def test_generated_layer_norms_share_their_answer_while_elementwise_chains_differ():
    """What the protocol's test set has to live with: a fresh task of a norm variant has a training task's exact
    answer, an elementwise chain differs by its expression lines."""
    tasks = generate_tasks(40, seed=0)
    norms = [t.solution for t in tasks if t.key == "norm/layer_norm"]
    chains = [t.solution for t in tasks if t.key == "elementwise/binary"]
    assert len(set(norms)) <= 2 < len(norms)  # affine or not
    assert min(line_distance(a, b) for a in chains for b in chains if a != b) >= 1
