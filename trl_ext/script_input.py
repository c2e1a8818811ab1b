"""Bad input to the training scripts (``scripts/train.py``, ``scripts/sft.py``) answered in one line: a recipe that
is missing, not YAML, has an unknown key or a wrong-typed value, and a dataset that cannot be loaded. Each becomes
``error: ...`` on stderr and exit 2."""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _config_path(argv: Sequence[str]) -> str | None:
    for index, arg in enumerate(argv):
        if arg == "--config" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def check_recipe(path: str, dataclass_types: Sequence[type]) -> None:
    """The recipe exists, parses as a YAML mapping, and names only fields of ``dataclass_types``."""
    import yaml

    recipe = Path(path)
    if not recipe.is_file():
        fail(f"recipe {path} does not exist (the shipped ones are in recipes/)")
    try:
        data = yaml.safe_load(recipe.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        fail(f"recipe {path} is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}")
    if data is None:
        return
    if not isinstance(data, dict):
        fail(f"recipe {path} must be a mapping of option: value, got {type(data).__name__}")
    known = {field.name for cls in dataclass_types for field in dataclasses.fields(cls)}
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            fail(f"recipe {path}: unknown option {key!r}{hint}")


def parse_or_exit(parser: Any, argv: Sequence[str] | None = None) -> tuple[Any, ...]:
    """``parser.parse_args_and_config()`` of a ``TrlParser``, with its recipe checked first and an argument error
    reduced to argparse's own one-line message (not the full usage, hundreds of lines for a TRL config)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    config = _config_path(argv)
    if config is not None:
        check_recipe(config, parser.dataclass_types)
    if "-h" in argv or "--help" in argv:
        return parser.parse_args_and_config(argv)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            return parser.parse_args_and_config(argv)
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        lines = [line for line in captured.getvalue().splitlines() if line.strip()]
        message = lines[-1].split("error: ", 1)[-1] if lines else f"bad arguments (exit {exc.code})"
        fail(f"{message} (--help lists every option)")
    except (TypeError, ValueError) as exc:
        fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def load_dataset_or_exit(path: str, **kwargs: Any) -> Any:
    """``datasets.load_dataset(path, **kwargs)`` (``name`` there is a dataset config), or one line saying why it
    cannot be loaded."""
    import datasets

    try:
        return datasets.load_dataset(path, **kwargs)
    except FileNotFoundError as exc:  # no such folder or Hub dataset, or a folder without data files
        fail(
            f"cannot load dataset {path!r}: {str(exc).splitlines()[0]} "
            "(build one with: python -m dataset_builder build --format sample --out DIR)"
        )


def pretrained_or_exit(loader: Any, name: str, **kwargs: Any) -> Any:
    """``loader(name, **kwargs)`` (a transformers ``from_pretrained``), or one line saying why the model or tokenizer
    cannot be loaded. A name that can only be a local path (absolute, ``./``, ``~``, or inside a folder that exists
    here) and does not exist is refused at once: tried as a Hub id it would wait on the network first."""
    path = Path(name).expanduser()
    local = (
        path.is_absolute()
        or name.startswith((".", "~"))
        or (path.parent != Path(".") and path.parent.is_dir())
    )
    if local and not path.exists():
        fail(f"cannot load model {name!r}: no such local folder")
    try:
        return loader(name, **kwargs)
    except OSError as exc:
        where = "no such local folder, and the Hub" if not path.exists() else "the folder"
        fail(f"cannot load model {name!r}: {where} gave: {str(exc).splitlines()[0][:300]}")
