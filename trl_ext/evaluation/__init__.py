"""Deprecated: the evaluation harness is the ``kernel_eval`` package now (one package per job: ``trl_ext`` trains,
``kernel_eval`` evaluates). ``trl_ext.evaluation`` and its submodules keep working, with a DeprecationWarning, for
one release: every ``trl_ext.evaluation.<module>`` is the same module object as ``kernel_eval.<module>``.
"""

from __future__ import annotations

import importlib
import sys
import warnings

warnings.warn("trl_ext.evaluation moved to kernel_eval; import kernel_eval instead (the old name goes in the next "
              "release)", DeprecationWarning, stacklevel=2)

_MODULES = ("cache", "cli", "completions", "config", "endpoint", "harness", "metrics", "report", "run", "tasks",
            "ttscaling")
for _name in _MODULES:
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(f"kernel_eval.{_name}")
