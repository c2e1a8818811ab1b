"""torch.compile made unusable in the runner, before any candidate code arrives.

Compiler-made kernels are not the candidate's work, and on a GPU they are launched past the launch monitor.
``TORCH_COMPILE_DISABLE`` alone is a Python flag a candidate can flip back (``torch._dynamo.config.disable``), so
the runner also cuts dynamo's one way into the interpreter: every reference to the C function that installs its
frame hook (``set_eval_frame``) is replaced by one that installs nothing. A compiled function then runs as the
plain Python it wraps, and no compiler backend ever sees a frame. The static screen rejects the usual spellings
first; this is what holds when a spelling gets past it.
"""

from __future__ import annotations

import sys
from typing import Any


def _install_no_hook(callback: Any) -> None:
    """Stands in for ``set_eval_frame``: frames keep running in the plain interpreter, whatever is asked."""
    return None


def sever_torch_compile() -> int:
    """Turn dynamo off and replace every module-level reference to its frame-hook installer; returns how many
    references were replaced (at least one, or dynamo's layout changed and this raises)."""
    import torch
    import torch._dynamo.eval_frame  # noqa: F401 - imported now so that no later import brings a fresh reference

    torch._dynamo.config.disable = True
    native = torch._C._dynamo.eval_frame.set_eval_frame
    replaced = 0
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for name, value in list(namespace.items()):
            if value is native:
                namespace[name] = _install_no_hook
                replaced += 1
    if replaced == 0:
        raise RuntimeError("torch._C._dynamo.eval_frame.set_eval_frame was not found: cannot disable dynamo")
    return replaced
