"""Shape generalisation: run the candidate once more at other input sizes (catches shape-specialised fast paths).

The reference's module-level UPPER_CASE integer constants (``BATCH = 16``, ``DIM = 1024``...) are the sizes a
task is written around. They are multiplied by ``options.shape_scale`` (default 1.5: larger AND odd sizes catch
both fixed grids that cover only the shipped size and kernels that assume divisibility by a block size), the resized reference is imported as a new module, both models are rebuilt from
its ``get_init_inputs`` and compared on one input. If the resized reference itself cannot run, the check is reported
as not applicable (never as a candidate failure).
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import re
import sys
import types
from pathlib import Path
from typing import Any

import torch

from kernel_reward.options import EvalOptions

log = logging.getLogger(__name__)

_UPPER = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Constants that are structure rather than size: changing them changes what the task computes.
_STRUCTURAL = re.compile(r"KERNEL|STRIDE|PAD|DILATION|GROUP|HEAD|LAYER|AXIS|DIM_IDX|REDUCE|EPS|SEED|ORDER|NUM_CLASSES")


def resize_constants(source: str, scale: float, *, make_odd: bool) -> tuple[str, dict[str, tuple[int, int]]]:
    """Rewrite module-level ``NAME = <int>`` size constants; return the new source and {name: (old, new)}."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    changes: dict[str, tuple[int, int]] = {}
    edits: list[tuple[int, int, int, str]] = []  # (line index, col start, col end, text)
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        value = node.value
        if not (_UPPER.match(name) and not _STRUCTURAL.search(name)):
            continue
        if not (isinstance(value, ast.Constant) and type(value.value) is int and value.value >= 2):
            continue
        if value.lineno != value.end_lineno:
            continue
        new = max(1, round(value.value * scale))
        if make_odd and new > 2 and new % 2 == 0:
            new -= 1
        if new == value.value:
            continue
        changes[name] = (value.value, new)
        edits.append((value.lineno - 1, value.col_offset, value.end_col_offset, str(new)))
    for line_index, start, end, text in sorted(edits, reverse=True):
        line = lines[line_index]
        lines[line_index] = line[:start] + text + line[end:]
    return "".join(lines), changes


def task_tools() -> types.ModuleType | None:
    """``dataset_builder.tasks`` loaded from its file WITHOUT running ``dataset_builder/__init__.py``.

    That module is stdlib-only, but the package's ``__init__`` imports ``datasets`` (slow, and absent on the GPU
    machine); kernel_reward must depend on torch/triton/numpy/stdlib only. None when the package is not there.
    """
    global _TASK_TOOLS
    if _TASK_TOOLS is None:
        _TASK_TOOLS = False
        try:
            spec = importlib.util.find_spec("dataset_builder")
        except (ImportError, ValueError):
            spec = None
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        for location in locations:
            path = Path(location) / "tasks" / "__init__.py"
            if path.exists():
                tools_spec = importlib.util.spec_from_file_location("_kr_dataset_builder_tasks", path)
                if tools_spec is None or tools_spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(tools_spec)
                sys.modules[tools_spec.name] = module  # dataclasses look their module up there
                try:
                    tools_spec.loader.exec_module(module)
                except Exception as exc:  # their module broken or changed: fall back to our own rewrite
                    sys.modules.pop(tools_spec.name, None)
                    log.warning("could not load %s: %s", path, exc)
                    continue
                _TASK_TOOLS = module
                break
    return _TASK_TOOLS or None


_TASK_TOOLS: types.ModuleType | bool | None = None


def resized_variants(source: str, scale: float) -> list[tuple[str, dict[str, Any]]]:
    """Resized sources to try, most demanding first (odd sizes, then plain scaling).

    The new sizes are chosen here; the rewrite itself uses ``dataset_builder.tasks.resize_source`` (stdlib-only)
    when that package is importable, so the reward and the task set agree on what a size constant is.
    """
    tools = task_tools()
    resize_source = getattr(tools, "resize_source", None)
    variants: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for make_odd in (True, False):
        try:
            new_source, changes = resize_constants(source, scale, make_odd=make_odd)
        except SyntaxError:
            return variants
        via = "kernel_reward.shapes"
        if changes and resize_source is not None:
            try:
                new_source = resize_source(source, {name: new for name, (_old, new) in changes.items()})
                via = "dataset_builder.tasks.resize_source"
            except (KeyError, TypeError, ValueError) as exc:  # their stricter parser; keep our rewrite
                log.debug("resize_source refused %s: %s", sorted(changes), exc)
        if changes and new_source not in seen:
            seen.add(new_source)
            variants.append((new_source, {"via": via, "odd": make_odd, "scale": scale,
                                          "constants": {k: list(v) for k, v in changes.items()}}))
    return variants


def check_shape_generalization(
    reference_code: str,
    client: Any,
    arena: Any,
    entry_point: str,
    device: torch.device,
    options: EvalOptions,
    seed: int,
) -> dict[str, Any]:
    """Run the resized check in the judge: the resized reference here, a second ``ModelNew`` (model 1) built in
    the runner from the resized init arguments and weights; returns ``shape_generalization`` (``passed``
    True/False/None)."""
    import secrets
    import tempfile

    from kernel_reward.judge import JudgeStop, build_remote
    from kernel_reward.loading import unload, write_and_import
    from kernel_reward.remote import RemoteCandidate, output_spec, slot_bytes
    from kernel_reward.tensors import clone_args, compare_outputs, make_inputs

    if options.shape_check == "off":
        return {"ran": False, "passed": None, "reason": "shape_check is off"}
    variants = resized_variants(reference_code, options.shape_scale)
    if not variants:
        return {"ran": False, "passed": None, "reason": "the task has no resizable UPPER_CASE size constants"}
    notes = []
    for source, info in variants:
        with tempfile.TemporaryDirectory(prefix="kr_resized_") as tmp:
            try:
                module = write_and_import(source, Path(tmp), "ref_resized")
            except Exception as exc:
                notes.append(f"resized reference does not import: {type(exc).__name__}: {exc}")
                continue
            try:
                try:
                    init = list(module.get_init_inputs())
                    build_seed = secrets.randbits(30)
                    torch.manual_seed(build_seed)
                    reference_model = getattr(module, entry_point)(*init).to(device)
                    inputs = make_inputs(module, seed + 1, device)
                    with torch.no_grad():
                        raw = reference_model(*clone_args(inputs))
                    spec = output_spec(raw)
                    reference = [t.detach().clone() for t in (raw if isinstance(raw, tuple | list) else [raw])]
                except Exception as exc:
                    notes.append(f"resized reference could not be built/run: {type(exc).__name__}: {exc}")
                    continue
                needed = slot_bytes(inputs, spec)
                if needed > arena.nbytes:
                    notes.append(f"resized task ({needed} bytes a call) does not fit the {arena.nbytes}-byte exchange arena")
                    continue
                try:
                    build_remote(client, arena, 1, build_seed, init, dict(reference_model.state_dict()))
                except JudgeStop as stop:
                    return {"ran": True, "passed": False, **info, "reason": f"ModelNew cannot be built at resized sizes: {stop}"[:500]}
                except MemoryError as exc:
                    notes.append(f"resized task does not fit the exchange arena: {exc}")
                    continue
                arena.layout.reset()
                try:
                    outcome = RemoteCandidate(client, arena, spec, model_id=1).call(inputs)
                except MemoryError as exc:
                    notes.append(f"resized task does not fit the exchange arena: {exc}")
                    continue
                if not outcome.ok:
                    return {"ran": True, "passed": False, **info, "reason": (outcome.error or outcome.kind or "failed")[:500]}
                comparison = compare_outputs(outcome.outputs, reference, options.tolerance)
                return {"ran": True, "passed": comparison.ok, **info, "reason": comparison.reason,
                        "max_abs_error": comparison.max_abs_error}
            finally:
                unload(module)
    return {"ran": False, "passed": None, "reason": "; ".join(notes) or "no usable resized variant"}
