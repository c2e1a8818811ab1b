"""The shipped task set and its API: loading in both presets, size presets, resize_source, malformed files."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
import torch

from dataset_builder import tasks as tasks_api
from dataset_builder.tasks import METADATA_NAMES, Task, load_tasks, resize_source, size_constants, task_names

REQUIRED_CATEGORIES = {
    "elementwise", "activation", "reduction", "softmax", "norm", "matmul",
    "conv", "pooling", "attention", "loss", "scan", "fused",
}  # fmt: skip

# The small preset must keep one Triton-interpreter evaluation around a second (docs/dataset.md).
SMALL_MAX_TENSOR_ELEMENTS = 4096
SMALL_MAX_PARAM_ELEMENTS = 4096
# Full sizes are realistic GPU workloads, yet no single input should need more than 1 GiB.
FULL_MIN_LARGEST_INPUT_ELEMENTS = 2**20
FULL_MAX_TENSOR_BYTES = 2**30


def _import_program(source: str, path: Path):
    """Import a program from a real file (as the evaluator does), returning the module."""
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v)]
    return []


@pytest.fixture(scope="module")
def full_tasks() -> list[Task]:
    return load_tasks("full")


@pytest.fixture(scope="module")
def small_tasks() -> list[Task]:
    return load_tasks("small")


# --------------------------------------------------------------------------------------------------------
# The set as a whole


def test_task_set_is_large_sorted_and_covers_every_family(full_tasks):
    names = [t.name for t in full_tasks]
    assert len(names) >= 45
    assert names == sorted(names) == task_names()
    assert len(set(names)) == len(names)
    assert REQUIRED_CATEGORIES <= {t.category for t in full_tasks}
    # The norms the issue names are all there.
    norm_ops = {op for t in full_tasks if t.category == "norm" for op in t.ops}
    assert {
        "torch.nn.LayerNorm",
        "torch.nn.GroupNorm",
        "torch.nn.functional.batch_norm",
        "torch.rsqrt",
    } <= norm_ops
    # Fused chains are level 2 with at least two ops; a few fp16 tasks, no bf16 (the interpreter's is wrong).
    for t in full_tasks:
        if t.category == "fused":
            assert t.level == "2" and len(t.ops) >= 2, t.name
    assert sum("half()" in t.source for t in full_tasks) >= 2
    assert not any("bfloat16" in t.source for t in full_tasks)


@pytest.mark.parametrize("preset", ["full", "small"])
def test_every_task_is_a_complete_program_with_metadata_stripped(preset, full_tasks, small_tasks):
    for t in full_tasks if preset == "full" else small_tasks:
        assert t.preset == preset
        assert t.level in ("1", "2") and t.category and t.ops, t.name
        tree = ast.parse(t.source)
        assert ast.get_docstring(tree), f"{t.name}: module docstring"
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        assert {"Model", "get_inputs", "get_init_inputs"} <= defined, t.name
        assigned = {
            n.targets[0].id
            for n in tree.body
            if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
        }
        assert not assigned & set(METADATA_NAMES), f"{t.name}: metadata left in the source"
        assert size_constants(t.source), f"{t.name}: no size constants"
        assert "\n\n\n\n" not in t.source


def test_small_source_is_the_full_source_with_only_the_constants_changed(full_tasks, small_tasks):
    for full, small in zip(full_tasks, small_tasks, strict=True):
        assert full.name == small.name
        small_sizes = size_constants(small.source)
        full_sizes = size_constants(full.source)
        changed = {k for k in full_sizes if full_sizes[k] != small_sizes[k]}
        assert changed, f"{full.name}: the small preset changes nothing"
        assert resize_source(full.source, {k: small_sizes[k] for k in changed}) == small.source
        for k in changed:
            assert small_sizes[k] < full_sizes[k], f"{full.name}: small {k} is not smaller"


def test_small_preset_builds_runs_and_stays_small(small_tasks, tmp_path):
    for t in small_tasks:
        module = _import_program(t.source, tmp_path / f"{t.name}.py")
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        inputs = module.get_inputs()
        with torch.no_grad():
            outputs = _tensors(model(*inputs))
        assert outputs, t.name
        for x in _tensors(inputs) + outputs:
            assert x.numel() <= SMALL_MAX_TENSOR_ELEMENTS, f"{t.name}: tensor of {x.numel()} elements"
        for name, p in model.named_parameters():
            assert p.numel() <= SMALL_MAX_PARAM_ELEMENTS, f"{t.name}: parameter {name} has {p.numel()}"
        for y in outputs:
            assert y.dtype != torch.bfloat16
            if y.is_floating_point():
                assert torch.isfinite(y).all(), t.name


def test_full_preset_has_realistic_sizes_checked_on_the_meta_device(full_tasks, tmp_path):
    """Build every full-size model and run forward on meta tensors: shapes only, no memory."""
    for t in full_tasks:
        module = _import_program(t.source, tmp_path / f"{t.name}.py")
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
            inputs = _tensors(module.get_inputs())
            outputs = _tensors(model(*inputs))
        assert outputs and all(y.is_meta for y in outputs), t.name
        assert max(x.numel() for x in inputs) >= FULL_MIN_LARGEST_INPUT_ELEMENTS, (
            f"{t.name}: too small for a GPU"
        )
        for x in inputs + outputs:
            assert x.numel() * x.element_size() <= FULL_MAX_TENSOR_BYTES, (
                f"{t.name}: {tuple(x.shape)} too large"
            )


def test_every_size_constant_can_grow_to_an_odd_value(small_tasks, tmp_path):
    """The reward re-runs tasks at other (odd) sizes to catch shape-specialised kernels: references must allow it."""
    for t in small_tasks:
        sizes = size_constants(t.source)
        grown = {k: v + v // 2 - (1 if (v + v // 2) % 2 == 0 else 0) for k, v in sizes.items() if v >= 2}
        module = _import_program(resize_source(t.source, grown), tmp_path / f"{t.name}_grown.py")
        torch.manual_seed(0)
        model = module.Model(*module.get_init_inputs())
        with torch.no_grad():
            outputs = _tensors(model(*module.get_inputs()))
        assert outputs, t.name


# --------------------------------------------------------------------------------------------------------
# load_tasks


def test_load_tasks_by_name_sorts_dedups_and_rejects_unknown_names():
    names = task_names()
    picked = load_tasks("small", names=[names[3], names[0], names[3]])
    assert [t.name for t in picked] == [names[0], names[3]]
    with pytest.raises(ValueError, match=r"no_such_task.*also_missing|also_missing.*no_such_task"):
        load_tasks(names=["no_such_task", names[0], "also_missing"])
    with pytest.raises(ValueError, match="preset"):
        load_tasks("medium")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="single string"):
        load_tasks(names=names[0])


def test_task_is_frozen():
    task = load_tasks(names=[task_names()[0]])[0]
    with pytest.raises(AttributeError):
        task.name = "other"  # type: ignore[misc]


# --------------------------------------------------------------------------------------------------------
# resize_source and size_constants

PROGRAM = '''"""Doc: BATCH = 999 in a docstring is not a constant."""
import torch

BATCH = 128
DIM: int = 4096  # hidden size
ÄPFEL = 7  # a non-ASCII name before the literal: ast offsets are bytes
EPS = 1e-5
scale = 3


def get_inputs():
    return [torch.randn(BATCH, DIM)]
'''


def test_resize_source_rewrites_only_the_literals():
    out = resize_source(PROGRAM, {"BATCH": 4, "DIM": 64, "ÄPFEL": 12345})
    assert size_constants(out) == {"BATCH": 4, "DIM": 64, "ÄPFEL": 12345}
    assert "DIM: int = 64  # hidden size" in out
    assert "ÄPFEL = 12345  # a non-ASCII" in out
    assert "BATCH = 999 in a docstring" in out
    # Every other line is untouched.
    changed = [(a, b) for a, b in zip(PROGRAM.splitlines(), out.splitlines(), strict=True) if a != b]
    assert len(changed) == 3
    assert resize_source(PROGRAM, {}) == PROGRAM


def test_size_constants_ignores_floats_lowercase_and_non_literals():
    assert size_constants(PROGRAM) == {"BATCH": 128, "DIM": 4096, "ÄPFEL": 7}
    assert size_constants("A = 2 * 3\nB = True\nC = 5\n") == {"C": 5}


def test_resize_source_errors_name_the_problem():
    with pytest.raises(KeyError, match=r"\['HEIGHT'\].*BATCH"):
        resize_source(PROGRAM, {"HEIGHT": 3})
    with pytest.raises(KeyError, match="EPS"):  # a float constant is not a size
        resize_source(PROGRAM, {"EPS": 1})
    with pytest.raises(TypeError, match="BATCH"):
        resize_source(PROGRAM, {"BATCH": 4.0})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="BATCH"):
        resize_source(PROGRAM, {"BATCH": True})
    with pytest.raises(ValueError, match="more than once"):
        resize_source("N = 1\nN = 2\n", {"N": 3})
    with pytest.raises(ValueError, match="does not parse"):
        resize_source("N = = 1\n", {"N": 3})


def test_resized_task_still_runs_at_the_new_size(tmp_path):
    task = load_tasks("small", names=["matmul_transposed_b"])[0]
    module = _import_program(resize_source(task.source, {"M": 5, "N": 7}), tmp_path / "resized.py")
    a, b = module.get_inputs()
    y = module.Model(*module.get_init_inputs())(a, b)
    assert y.shape == (5, 7)
    torch.testing.assert_close(y, a @ b.t())


# --------------------------------------------------------------------------------------------------------
# Malformed task files


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("N = 8\n", "missing SMALL"),
        ("N = 8\nSMALL = {'M': 2}\n", r"SMALL does not fit.*\['M'\]"),
        ("N = 8\nSMALL = {'N': 2}\nLEVEL = 1\n", "LEVEL must be"),
        ("N = 8\nSMALL = {'N': 2}\nOPS = 'torch.add'\n", "OPS must be a list"),
        ("N = 8\nSMALL = {'N': 2.5}\n", "SMALL does not fit"),
        ("N = 8\nSMALL = dict(N=2)\n", "plain literal"),
        ("def broken(:\n", "does not parse"),
    ],
)
def test_malformed_task_file_errors_name_the_file(tmp_path, body, message):
    path = tmp_path / "bad_task.py"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(tasks_api.TaskFileError, match=re.compile(f"bad_task.py.*{message}", re.S)):
        tasks_api._load_task(path, "small")


def test_the_task_command_writes_a_shipped_task_at_its_small_sizes(tmp_path, capsys):
    from dataset_builder.__main__ import main
    from dataset_builder.tasks import load_tasks

    out = tmp_path / "silu.py"
    assert main(["task", "activation_silu", "--out", str(out)]) == 0
    (small,) = load_tasks("small", ["activation_silu"])
    (full,) = load_tasks("full", ["activation_silu"])
    assert out.read_text() == small.source != full.source
    assert main(["task", "activation_silu", "--preset", "full"]) == 0
    assert capsys.readouterr().out.endswith(full.source)
    assert main(["task", "no_such_task"]) == 1
    assert capsys.readouterr().err.startswith("error: unknown task name(s) ['no_such_task']")
