"""Every corpus entry that patches the harness by name still finds what it patches.

Several attacks locate their target by module and attribute name (``compare_outputs``, ``trial_seeds``,
``send_message``, ``EvalResult.to_dict``...). If the code they aim at moves or is renamed, such an attack patches
nothing and its entry passes for the wrong reason. This test loads every module of the package in one process (as
the runner, forked from a zygote that imported them all, holds them), applies each entry's patch, and checks that
every target its header names was replaced.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hack_corpus import load_corpus
from tests.kernel_reward.conftest import REPO_ROOT

CORPUS = load_corpus()
PATCHING = [entry for entry in CORPUS if entry.targets]

# Runs in a fresh interpreter: every kernel_reward module imported, the entry's definitions executed without its
# module-level statements (some write forged frames to inherited file descriptors), then its installer called.
PROBE = r"""
import ast, importlib, json, pkgutil, sys, types
import kernel_reward

for info in pkgutil.walk_packages(kernel_reward.__path__, "kernel_reward."):
    importlib.import_module(info.name)

def snapshot():
    seen = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("kernel_reward"):
            continue
        for attr, value in list(vars(module).items()):
            seen[f"{name}.{attr}"] = id(value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    seen[f"{name}.{attr}.{member}"] = id(inner)
    return seen

path, installer = sys.argv[1], sys.argv[2]
tree = ast.parse(open(path).read())
tree.body = [node for node in tree.body if not isinstance(node, (ast.Expr, ast.With, ast.If, ast.For, ast.Try))]
entry = types.ModuleType("corpus_entry")
entry.__file__ = path
before = snapshot()
exec(compile(tree, path, "exec"), entry.__dict__)
getattr(entry, installer)()
after = snapshot()
print(json.dumps(sorted(key for key, value in before.items() if after.get(key) != value)))
"""


def patched_by(entry) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(entry.path), entry.installer],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, TRITON_INTERPRET="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_attacks_that_name_the_harness_declare_their_targets():
    """An attack that searches the harness's modules must say what it hopes to find there."""
    undeclared = [e.name for e in CORPUS if e.is_attack and "harness_modules" in e.source and not e.targets]
    assert undeclared == []
    assert len(PATCHING) >= 5


@pytest.mark.parametrize("entry", PATCHING, ids=[entry.name for entry in PATCHING])
def test_entry_still_finds_its_targets(entry):
    patched = patched_by(entry)
    missing = [target for target in entry.targets if target not in patched]
    assert missing == [], f"{entry.name} no longer reaches {missing}; it patched {patched}"
