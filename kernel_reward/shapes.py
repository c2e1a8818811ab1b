"""Shape generalisation: run the candidate once more at other input sizes (catches shape-specialised fast paths).

The reference's module-level UPPER_CASE integer constants (``BATCH = 16``, ``DIM = 1024``...) are the sizes a
task is written around. They are rewritten by a factor (``dataset_builder.tasks.resize_source`` when that exists,
else the small rewrite below), the resized reference is imported as a new module, both models are rebuilt from
its ``get_init_inputs`` and compared on one input. Sizes are made odd where possible, so kernels that silently
assume divisibility by a block size show it. If the resized reference itself cannot run, the check is reported
as not applicable (never as a candidate failure).
"""

from __future__ import annotations

import ast
import logging
import re
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


def resized_variants(source: str, scale: float) -> list[tuple[str, dict[str, Any]]]:
    """Candidate resized sources, most demanding first (odd sizes, then plain scaling)."""
    variants: list[tuple[str, dict[str, Any]]] = []
    try:
        from dataset_builder.tasks import resize_source  # type: ignore[attr-defined]
    except ImportError:
        resize_source = None
    if resize_source is not None:
        try:
            variants.append((resize_source(source, scale), {"via": "dataset_builder.tasks.resize_source"}))
        except Exception as exc:  # their helper may not handle every task; fall back to ours
            log.debug("resize_source failed: %s", exc)
    for make_odd in (True, False):
        try:
            new_source, changes = resize_constants(source, scale, make_odd=make_odd)
        except SyntaxError:
            return variants
        if changes:
            variants.append((new_source, {"via": "kernel_reward.shapes", "odd": make_odd,
                                          "constants": {k: list(v) for k, v in changes.items()}}))
    return variants


def check_shape_generalization(
    reference_code: str,
    candidate_module: Any,
    entry_point: str,
    device: torch.device,
    options: EvalOptions,
    work_dir: Path,
    seed: int,
) -> dict[str, Any]:
    """Run the resized check; returns the ``shape_generalization`` dict (``passed`` True/False/None)."""
    from kernel_reward.correctness import CandidateRunner, _Stop, run_reference
    from kernel_reward.loading import build_models, unload, write_and_import
    from kernel_reward.tensors import compare_outputs, make_inputs

    if options.shape_check == "off":
        return {"ran": False, "passed": None, "reason": "shape_check is off"}
    variants = resized_variants(reference_code, options.shape_scale)
    if not variants:
        return {"ran": False, "passed": None, "reason": "the task has no resizable UPPER_CASE size constants"}
    notes = []
    for source, info in variants:
        try:
            module = write_and_import(source, work_dir, "ref_resized")
        except Exception as exc:
            notes.append(f"resized reference does not import: {type(exc).__name__}: {exc}")
            continue
        try:
            try:
                task = build_models(module, candidate_module, entry_point, device, seed)
                inputs = make_inputs(module, seed + 1, device)
                reference = run_reference(task, inputs, device)
            except Exception as exc:
                notes.append(f"resized reference or ModelNew could not be built/run: {type(exc).__name__}: {exc}")
                if "ModelNew" in str(exc):
                    return {"ran": True, "passed": False, **info, "reason": f"ModelNew cannot be built at resized sizes: {exc}"}
                continue
            runner = CandidateRunner(task, device, options)
            try:
                outputs = runner.call(inputs)
            except _Stop as stop:
                return {"ran": True, "passed": False, **info, "reason": str(stop)[:500]}
            comparison = compare_outputs(outputs, reference, options.tolerance)
            return {"ran": True, "passed": comparison.ok, **info, "reason": comparison.reason,
                    "max_abs_error": comparison.max_abs_error}
        finally:
            unload(module)
    return {"ran": False, "passed": None, "reason": "; ".join(notes) or "no usable resized variant"}
