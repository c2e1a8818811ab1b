"""The harness moved from ``trl_ext.evaluation`` to ``kernel_eval``: the old import paths keep working for one
release, warn, and give the very same modules (so isinstance checks and monkeypatches agree)."""

from __future__ import annotations

import importlib
import sys

import pytest


def test_old_import_path_warns_and_aliases_the_new_modules():
    sys.modules.pop("trl_ext.evaluation", None)
    with pytest.warns(DeprecationWarning, match="kernel_eval"):
        old = importlib.import_module("trl_ext.evaluation")
    assert old is sys.modules["trl_ext.evaluation"]
    from trl_ext.evaluation.metrics import Outcome as OldOutcome

    import kernel_eval.harness
    from kernel_eval.metrics import Outcome
    from trl_ext.evaluation import harness as old_harness

    assert old_harness is kernel_eval.harness and OldOutcome is Outcome


def test_trl_ext_does_not_import_the_reward_or_the_harness():
    """trl_ext trains; it imports neither kernel_reward nor kernel_eval (the deprecation shim aside)."""
    import ast
    from pathlib import Path

    root = Path(importlib.import_module("trl_ext").__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        if path.parent.name == "evaluation":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("kernel_reward", "kernel_eval")]
    assert offenders == []
