"""The package layout's rules, read from the source: folders by process, no import cycles, small modules.

Every import statement counts, also one inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kernel_reward", "trl_ext", "kernel_eval", "dataset_builder")
MAX_MODULES_PER_FOLDER = 12
MAX_LINES_WITHOUT_A_REASON = 400


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules(package: str) -> dict[str, Path]:
    return {
        module_name(path): path
        for path in (REPO_ROOT / package).rglob("*.py")
        if "tasks" not in path.relative_to(REPO_ROOT / package).parts
    }


def imported_modules(name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    """The modules of ``known`` that ``path`` imports (``from pkg import mod`` resolves to ``pkg.mod``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = name.split(".")[: len(name.split(".")) - node.level + is_package]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                target = f"{base}.{alias.name}"
                if target in known:
                    yield target
                elif base in known:
                    yield base


def import_graph() -> dict[str, set[str]]:
    known: dict[str, Path] = {}
    for package in PACKAGES:
        known.update(package_modules(package))
    graph = {name: set() for name in known}
    for name, path in known.items():
        for target in imported_modules(name, path, known):
            # a package's own __init__ is imported by every module inside it: not an edge of the module's choosing
            if target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


GRAPH = import_graph()


def imports_from(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    prefix = f"kernel_reward.{folder}."
    return sorted(
        f"{source} -> {target}"
        for source, targets in GRAPH.items()
        if source.startswith(prefix)
        for target in targets
        if target.startswith(tuple(f"kernel_reward.{f}" for f in forbidden))
    )


def test_no_import_cycles_anywhere():
    assert cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    ("folder", "forbidden"),
    [
        ("judge", ("runner",)),  # the trusted side never runs the untrusted side's code in its own process
        ("timing", ("runner",)),
        ("service", ("judge", "timing")),  # the service schedules requests; it does not decide verdicts
        ("screen", ("judge", "timing", "runner", "ipc", "service")),
    ],
)
def test_folders_import_only_across_allowed_boundaries(folder, forbidden):
    assert imports_from(folder, forbidden) == []


def test_the_screen_needs_no_torch():
    """Importing every screen module (and what they import) loads neither torch nor triton."""
    screen = sorted(name for name in GRAPH if name.startswith("kernel_reward.screen"))
    script = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in screen)
        + "print(sorted(m for m in ('torch', 'triton', 'numpy') if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_folders_stay_small():
    folders: dict[Path, int] = {}
    for path in (REPO_ROOT / "kernel_reward").rglob("*.py"):
        folders[path.parent] = folders.get(path.parent, 0) + (path.name != "__init__.py")
    assert {str(f.relative_to(REPO_ROOT)): n for f, n in folders.items() if n > MAX_MODULES_PER_FOLDER} == {}


def test_long_modules_say_why_in_their_docstring():
    long_without_reason = []
    for package in PACKAGES:
        for name, path in package_modules(package).items():
            lines = len(path.read_text().splitlines())
            docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
            if lines > MAX_LINES_WITHOUT_A_REASON and "Why one module" not in docstring:
                long_without_reason.append(f"{name} ({lines} lines)")
    assert long_without_reason == []


def test_library_code_never_imports_tests():
    offenders = []
    for package in PACKAGES:
        for name, path in package_modules(package).items():
            for node in ast.walk(ast.parse(path.read_text())):
                modules = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                offenders += [
                    f"{name} imports {m}" for m in modules if m == "tests" or m.startswith("tests.")
                ]
    assert offenders == []
