"""House rules that a grep can check: code comments and docstrings speak in the present tense about the code.

History (run letters, dates, issue numbers, sessions, commit hashes) belongs in commit messages and docs/; a module
docstring says what the module is in a few lines.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CODE_FOLDERS = (
    "kernel_reward",
    "trl_ext",
    "kernel_eval",
    "dataset_builder",
    "scripts",
    "benchmarks",
    "tools",
)
MAX_MODULE_DOCSTRING_LINES = 15
HISTORY = re.compile(
    r"\bissues? \d+\b|\bruns? [b-hj-z](?:/[a-z])*(?=[,;:)]|\s*$)|\(runs? [a-z]\b|\b20\d\d-\d\d-\d\d\b"
    r"|\b(?:this|last|earlier|next|previous|later) session\b|\bcommit [0-9a-f]{7,}\b"
    r"|(?-i:\b(?:EVIDENCE|FACTS)(?:\.md)?\b)",
    re.IGNORECASE,
)


def code_files() -> list[Path]:
    return sorted(
        p
        for folder in CODE_FOLDERS
        for p in (REPO_ROOT / folder).rglob("*.py")
        if "tasks" not in p.relative_to(REPO_ROOT).parts
    )


def comments_and_docstrings(path: Path) -> list[tuple[int, str]]:
    source = path.read_text()
    texts = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                texts.append((node.body[0].lineno, docstring))
    return texts


def history_mentions(path: Path) -> list[str]:
    found = []
    for line, text in comments_and_docstrings(path):
        for match in HISTORY.finditer(text):
            found.append(f"{path.relative_to(REPO_ROOT)}:{line}: {match.group(0)!r}")
    return found


@pytest.mark.parametrize(
    "text, found",
    [
        ("# on the H200 (run m) it read 0.9x", True),
        ("# measured 2026-12-03", True),
        ("# see issue 15", True),
        ("# KernelBench issue #166: compiled kernels are not the candidate's", False),
        ("# measured in an earlier session", True),
        ("# the child runs in its own session (setsid)", False),
        ("# run a candidate", False),
        ("# runs a kernel in the runner", False),
        ("# the run's budget", False),
    ],
)
def test_the_history_pattern(text, found):
    assert bool(HISTORY.search(text)) is found


def test_comments_and_docstrings_carry_no_history():
    found = [mention for path in code_files() for mention in history_mentions(path)]
    assert found == []


def test_module_docstrings_are_short():
    long = []
    for path in code_files():
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        if len(docstring.splitlines()) > MAX_MODULE_DOCSTRING_LINES:
            long.append(f"{path.relative_to(REPO_ROOT)} ({len(docstring.splitlines())} lines)")
    assert long == []


def test_readme_is_a_guide():
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.encode()) <= 15_000
    assert not re.search(
        r"\brun [a-z]\b|\bsessions?\b|\b[0-9a-f]{7,40}\b(?![\w.-]*\.(json|txt|md|png))", readme
    )


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff_is_clean(command):
    """One lint and format configuration (pyproject.toml), kept clean."""
    pytest.importorskip("ruff")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *command], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
