"""Shape generalisation: run the candidate once more at other input sizes (catches shape-specialised fast paths).

The reference's module-level UPPER_CASE integer constants (``BATCH = 16``, ``DIM = 1024``...) are the sizes a
task is written around. They are multiplied by ``options.shape_scale`` (default 1.5: larger AND odd sizes catch
both fixed grids that cover only the shipped size and kernels that assume divisibility by a block size), the resized reference is imported as a new module, both models are rebuilt from
its ``get_init_inputs`` and compared on one input. If the resized reference itself cannot run, the check is reported
as not applicable (never as a candidate failure).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch

from kernel_reward.common.tensors import (
    flatten_outputs,
    make_inputs,
    only_tensors,
    seed_forward,
    storage_ptrs,
)
from kernel_reward.judge.compare import fingerprint
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.result import Status
from kernel_reward.screen import sizes

log = logging.getLogger(__name__)


def resized_variants(source: str, scale: float) -> list[tuple[str, dict[str, Any]]]:
    """Resized sources to try, most demanding first: ``scale`` times the sizes (odd, then plain), then the same
    shrunk by ``scale`` for tasks whose larger variant cannot fit the exchange arena (every full-size GPU task's
    call fills it); none when the program has no resizable size constants or cannot be read (``sizes``: the same
    rewrite the task set's presets use)."""
    variants: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for factor, make_odd in ((scale, True), (scale, False), (1 / scale, True), (1 / scale, False)):
        try:
            changes = sizes.scaled_sizes(source, factor, make_odd=make_odd)
        except ValueError as exc:  # does not parse, or a constant assigned twice: nothing to resize reliably
            log.debug("no resized variants: %s", exc)
            return variants
        if not changes:
            continue
        new_source = sizes.resize_source(source, {name: new for name, (_old, new) in changes.items()})
        if new_source not in seen:
            seen.add(new_source)
            variants.append(
                (
                    new_source,
                    {
                        "via": "kernel_reward.screen.sizes",
                        "odd": make_odd,
                        "scale": round(factor, 4),
                        "constants": {k: list(v) for k, v in changes.items()},
                    },
                )
            )
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
    import tempfile

    from kernel_reward.common.loading import unload, write_and_import
    from kernel_reward.judge.remote import RemoteCandidate, args_nbytes, build_remote, slot_bytes
    from kernel_reward.judge.seeds import fresh_seed

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
                shapes_only = inputs_on_meta(module)
                if shapes_only is not None and args_nbytes(shapes_only, align=0) > arena.nbytes:
                    # Known before drawing them: resized inputs (1.5x each size, 3.4x the bytes of a matmul's)
                    # that cannot fit the arena are never allocated (level1/6 held 3 GiB beside a 1 GiB call).
                    notes.append(
                        f"resized inputs ({args_nbytes(shapes_only, align=0)} bytes) do not fit the "
                        f"{arena.nbytes}-byte exchange arena"
                    )
                    continue
                try:
                    init = list(module.get_init_inputs())
                    build_seed = fresh_seed()
                    torch.manual_seed(build_seed)
                    reference_model = getattr(module, entry_point)(*init).to(device)
                    inputs, reference, spec = _reference_outputs(module, reference_model, seed + 1, device)
                except Exception as exc:
                    notes.append(f"resized reference could not be built/run: {type(exc).__name__}: {exc}")
                    continue
                needed = slot_bytes(inputs, spec)
                if needed > arena.nbytes:
                    notes.append(
                        f"resized task ({needed} bytes a call) does not fit the {arena.nbytes}-byte exchange arena"
                    )
                    continue
                try:
                    build_remote(client, arena, 1, build_seed, init, dict(reference_model.state_dict()))
                except JudgeStop as stop:
                    return {
                        "ran": True,
                        "passed": False,
                        **info,
                        "reason": f"ModelNew cannot be built at resized sizes: {stop}"[:500],
                    }
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
                    return {
                        "ran": True,
                        "passed": False,
                        **info,
                        "reason": (outcome.error or outcome.kind or "failed")[:500],
                    }
                if not outcome.own_launches:
                    # a call like any other: answered without the candidate's own kernel, it is a fallback
                    return {
                        "ran": True,
                        "passed": False,
                        **info,
                        "reason": "no Triton kernel of the candidate launched at resized sizes (other launches: "
                        f"{', '.join(outcome.launched) or 'none'}): a fallback for sizes other than the shipped one",
                    }
                comparison = outcome.outputs.compare(reference, options.tolerance)
                return {
                    "ran": True,
                    "passed": comparison.ok,
                    **info,
                    "reason": comparison.reason,
                    "max_abs_error": comparison.max_abs_error,
                }
            finally:
                unload(module)
    return {"ran": False, "passed": None, "reason": "; ".join(notes) or "no usable resized variant"}


def warm_meta_device() -> None:
    """Pay the meta device's first use (torch imports its Python meta kernels then: 0.3-0.4 s on the CPU box) before
    the zygote forks, not in every evaluation's shape check (each judge is a fresh fork)."""
    import torch._meta_registrations  # noqa: F401

    with torch.device("meta"):
        torch.randn(1), torch.rand(1), torch.randint(0, 2, (1,)), torch.randn(1, dtype=torch.float16)


def inputs_on_meta(module: Any) -> list[Any] | None:
    """``get_inputs()`` drawn on the meta device (shapes and dtypes, no memory), or None where it cannot run there."""
    try:
        with torch.device("meta"):
            return list(module.get_inputs())
    except Exception:  # noqa: BLE001 - a get_inputs that needs real values: the check then draws them first
        return None


def _reference_outputs(
    module: Any,
    model: torch.nn.Module,
    seed: int,
    device: torch.device,
) -> tuple[list[Any], list[torch.Tensor], Any]:
    """The resized inputs, the reference's outputs for them and their ``OutputSpec``, without a copy of either where none is needed: the
    reference runs on the inputs themselves, and inputs it wrote into are drawn again (the same seed, the same
    values); an output is copied only where it shares storage with the inputs or the model."""
    from kernel_reward.judge.remote import output_spec

    inputs = make_inputs(module, seed, device)
    before = fingerprint(only_tensors(inputs))
    with torch.no_grad():
        seed_forward()  # as the runner seeds the candidate's call
        raw = model(*inputs)
    spec = output_spec(raw)
    held = storage_ptrs([*inputs, *model.parameters(), *model.buffers()])
    outputs = [o.detach().clone() if storage_ptrs([o]) & held else o.detach() for o in flatten_outputs(raw)]
    del raw
    if fingerprint(only_tensors(inputs)) != before:
        del inputs
        inputs = make_inputs(module, seed, device)
    return inputs, outputs, spec


# The Triton interpreter runs a kernel's program instances one after another in Python (about 0.4 ms each): a call
# over more input than this takes minutes, and a full evaluation many calls.
INTERPRETER_MAX_INPUT_BYTES = 32 << 20


def refuse_tasks_too_large_for_the_interpreter(module: Any) -> None:
    """Stop, unscored, before any work when the task's inputs (sized on the meta device) are too large for the CPU
    interpreter: the task's size, not the candidate, would decide the outcome (a timeout)."""
    from kernel_reward.judge.remote import args_nbytes

    inputs = inputs_on_meta(module)
    nbytes = args_nbytes(inputs, align=0) if inputs is not None else 0
    if nbytes > INTERPRETER_MAX_INPUT_BYTES:
        raise JudgeStop(
            Status.INTERPRETER_UNSUPPORTED,
            f"the task's inputs are {nbytes / (1 << 20):.0f} MiB a call, too large for the CPU Triton interpreter "
            f"(limit {INTERPRETER_MAX_INPUT_BYTES >> 20} MiB): evaluate on a GPU, or use a shipped task's small sizes "
            "(python -m dataset_builder task NAME --out FILE; a dataset: build ... --preset small)",
            flag="task_too_large_for_interpreter",
            scored=False,
        )
