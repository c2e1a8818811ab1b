"""Load the reference and the candidate as real modules, build both models, and align their parameters.

Triton reads a kernel's source through ``inspect`` and cannot compile ``exec``'d code (FACTS 7), so both
programs are written to files in the evaluation's ``work_dir`` and imported from there under module names
unique to this evaluation (a warm worker evaluates many candidates; names must never collide).

Both models are built right after seeding torch with the same seed. Because a candidate may create its
parameters in another order, the reference's ``state_dict`` entries whose names and shapes match are then
copied into the candidate (``state_transfer`` in the result says which were copied and which were not).
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

_counter = itertools.count()


class CandidateLoadError(Exception):
    """The candidate (or the reference) could not be imported or built; ``phase`` says where it failed."""

    def __init__(self, phase: str, message: str) -> None:
        super().__init__(message)
        self.phase = phase


@dataclass
class LoadedTask:
    """Everything the later phases need from the two programs."""

    reference_module: types.ModuleType
    candidate_module: types.ModuleType
    reference_model: torch.nn.Module
    candidate_model: torch.nn.Module
    init_inputs: list[Any]
    state_transfer: dict[str, Any] = field(default_factory=dict)


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
    for name in (entry_point, "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise CandidateLoadError("reference", f"reference program defines no `{name}`")
    return module


def build_models(
    reference_module: types.ModuleType,
    candidate_module: types.ModuleType,
    entry_point: str,
    device: torch.device,
    seed: int,
) -> LoadedTask:
    """Build reference and candidate under the same seed on ``device`` and copy matching reference state."""
    init_inputs = list(reference_module.get_init_inputs())
    torch.manual_seed(seed)
    reference_model = getattr(reference_module, entry_point)(*init_inputs).to(device)
    torch.manual_seed(seed)
    try:
        candidate_cls = candidate_module.ModelNew
    except AttributeError as exc:
        raise CandidateLoadError("compile", "candidate module defines no `ModelNew`") from exc
    try:
        candidate_model = candidate_cls(*init_inputs)
        if not isinstance(candidate_model, torch.nn.Module):
            raise CandidateLoadError("compile", f"ModelNew(...) built a {type(candidate_model).__name__}, not an nn.Module")
        candidate_model = candidate_model.to(device)
    except CandidateLoadError:
        raise
    except Exception as exc:
        raise CandidateLoadError("compile", f"ModelNew(*get_init_inputs()) raised {type(exc).__name__}: {exc}") from exc
    transfer = transfer_state(reference_model, candidate_model)
    return LoadedTask(reference_module, candidate_module, reference_model, candidate_model, init_inputs, transfer)


def transfer_state(reference: torch.nn.Module, candidate: torch.nn.Module) -> dict[str, Any]:
    """Copy reference parameters/buffers into the candidate where names and shapes match; report what happened."""
    ref_state = reference.state_dict()
    cand_state = candidate.state_dict()
    copied, shape_mismatch = [], []
    with torch.no_grad():
        for name, value in ref_state.items():
            target = cand_state.get(name)
            if target is None:
                continue
            if target.shape != value.shape or target.dtype != value.dtype:
                shape_mismatch.append(name)
                continue
            target.copy_(value)
            copied.append(name)
    return {
        "copied": copied,
        "reference_only": sorted(set(ref_state) - set(cand_state)),
        "candidate_only": sorted(set(cand_state) - set(ref_state)),
        "shape_mismatch": shape_mismatch,
        "reference_tensors": len(ref_state),
    }


def unload(*modules: types.ModuleType) -> None:
    """Forget modules of a finished evaluation so a warm worker does not accumulate them."""
    for module in modules:
        sys.modules.pop(module.__name__, None)
