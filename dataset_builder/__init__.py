"""Build, validate, load and publish versions of the DR.Kernel RL dataset (typed Parquet + dataset card).

Public names: `FEATURES` (the row schema), `render_first_turn` (the first-turn prompt for a reference
program), `build_dataset`, `validate_dataset`, `push_dataset`; the command line is
`python -m dataset_builder {build,validate,push}`.

Names are imported on first use (PEP 562 `__getattr__`), so `python -m dataset_builder --help` and
`import dataset_builder.tasks` do not pay for importing `datasets`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FEATURES": "features",
    "parse_ops": "features",
    "to_upstream_row": "features",
    "TEMPLATE_VERSION": "prompt",
    "render_first_turn": "prompt",
    "DropReason": "checks",
    "SourceError": "sources.formats",
    "SourceFormat": "sources.formats",
    "BuildReport": "build_report",
    "build_dataset": "builder",
    "ValidationReport": "validate",
    "validate_dataset": "validate",
    "PushResult": "publish",
    "push_dataset": "publish",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'dataset_builder' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
