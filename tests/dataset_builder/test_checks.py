"""dataset_builder.checks: static problems of a reference, and the content hash behind uuids and duplicates."""

import pytest

from dataset_builder.checks import DropReason, content_hash, content_uuid, scan_reference, static_problems
from tests.support.db_rows import reference


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (reference(), []),
        (reference().replace("def forward", "def forward(("), [DropReason.PARSE_ERROR]),
        ("x = 1\0", [DropReason.PARSE_ERROR]),
        (reference(model="Net"), [DropReason.MISSING_MODEL]),
        (reference(inputs=False), [DropReason.MISSING_GET_INPUTS]),
        (reference(init=False), [DropReason.MISSING_GET_INIT_INPUTS]),
        (
            "import torch\n",
            [DropReason.MISSING_MODEL, DropReason.MISSING_GET_INPUTS, DropReason.MISSING_GET_INIT_INPUTS],
        ),
    ],
)
def test_static_problems(source, expected):
    assert static_problems(source) == expected
    assert scan_reference(source)[0] == expected


def test_model_may_be_bound_by_assignment_or_import():
    src = reference(model="Net") + "\nModel = Net\n"
    assert static_problems(src) == []
    assert static_problems(reference(model="Net"), entry_point="Net") == []


def test_content_hash_ignores_comments_and_layout_but_not_code():
    base = reference()
    noisy = "# a comment\n" + base.replace("return torch.relu(x)", "return torch.relu( x )  # why")
    assert content_hash(base) == content_hash(noisy) == scan_reference(noisy)[1]
    assert content_hash(base) != content_hash(reference("torch.tanh(x)"))
    assert content_uuid("p", base) == f"p_{content_hash(base)[:16]}"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("x = f( a , b )  # why\n\n", "x = f(a, b)", True),
        ('s = "a  # b"', 's = "a # b"', False),  # strings are kept verbatim, comments inside them too
        ('"""doc # text"""\nx = 1', '"""doc # other"""\nx = 1', False),
        ("y = not x", "y = notx", False),  # blanks between words matter
        (
            "if a:\n    if b:\n        c\n    d",
            "if a:\n    if b:\n        c\n        d",
            False,
        ),  # indentation
        ("x = a if b else c", "x = a  if b\telse c", True),
    ],
)
def test_normalisation_is_sound(a, b, same):
    assert (content_hash(a) == content_hash(b)) is same
