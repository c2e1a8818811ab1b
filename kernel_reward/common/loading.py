"""Import a program as a real module: the reference in the judge, the candidate in the runner.

Triton reads a kernel's source through ``inspect`` and cannot compile ``exec``'d code (background §7), so programs are
written to files in the process's own work dir and imported from there under module names unique to the process
(``unique_module_name``: names must never collide within one process).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import types
from pathlib import Path

_counter = itertools.count()


def import_from_file(path: Path, module_name: str) -> types.ModuleType:
    """Import ``path`` as ``module_name`` (registered in sys.modules so Triton and pickling can find it)."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot create an import spec for {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def unique_module_name(prefix: str) -> str:
    return f"_kr_{prefix}_{os.getpid()}_{next(_counter)}"


def write_and_import(source: str, work_dir: Path, prefix: str) -> types.ModuleType:
    name = unique_module_name(prefix)
    path = Path(work_dir) / f"{name}.py"
    path.write_text(source)
    return import_from_file(path, name)


def load_reference(reference_code: str, work_dir: Path, entry_point: str) -> types.ModuleType:
    """Import the reference and check it has what the harness needs (a task bug, not a candidate fault)."""
    module = write_and_import(reference_code, work_dir, "ref")
    check_reference(module, entry_point)
    return module


def check_reference(module: types.ModuleType, entry_point: str) -> None:
    """AttributeError naming the first of ``entry_point``, ``get_inputs``, ``get_init_inputs`` a reference lacks."""
    for name in (entry_point, "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise AttributeError(f"reference program defines no `{name}`")


def unload(*modules: types.ModuleType) -> None:
    """Forget modules of a finished evaluation so a warm worker does not accumulate them."""
    for module in modules:
        sys.modules.pop(module.__name__, None)
