"""``trl_ext`` trains: it imports neither the reward (``kernel_reward``) nor the evaluation harness (``kernel_eval``)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path


def test_trl_ext_does_not_import_the_reward_or_the_harness():
    root = Path(importlib.import_module("trl_ext").__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            )
            offenders += [
                f"{path.name}: {n}" for n in names if n.split(".")[0] in ("kernel_reward", "kernel_eval")
            ]
    assert offenders == []
