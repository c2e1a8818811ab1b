"""The untrusted runner: the only process that ever holds the candidate's code.

It imports the candidate, builds ``ModelNew`` from the init arguments and weights the judge hands it, and runs
forwards on inputs the judge places in the shared arena (``exchange``), writing each output into the output slot
the judge named. It sends DATA back (per-call errors, launch records, the structure it saw), never a verdict:
everything here can be rewritten by the candidate, so the judge (``judge.verdict``) treats every reply as a claim
about the candidate's own behaviour, and decides correctness, timing and reward from the arena and its own clock.

Protocol (length-prefixed JSON frames, ``wire``; judge -> runner, one reply each; fields in
docs/security.md#the-runner-protocol): ping -> pong | arena -> arena_ok (descriptor by SCM_RIGHTS) | load ->
loaded, load_failed | build -> built, build_failed | run -> ran | reset_buffers -> buffers_reset | coverage ->
coverage | ledger -> ledger_flushed | clock -> clock (before load only) | memory_cap -> memory_cap_ok | bye -> (exit).

``execute_call`` is also what the judge runs for the reference inside its own clock (both sides of a timed batch do
the same work per call). Why one module (about 410 lines): one handler per message over one state.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import torch

from kernel_reward.common import tensors
from kernel_reward.common.errors import format_exception
from kernel_reward.common.tensors import CallError, structured_outputs, synchronize
from kernel_reward.ipc import exchange, stream_gate, wire
from kernel_reward.runtime import apply_tf32_policy

MODES: dict[str, Callable[[], AbstractContextManager[Any]]] = {
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
    "enable_grad": torch.enable_grad,
}


def execute_call(
    model: Callable[..., Any], args: list[Any], outs: list[torch.Tensor], expected_structure: str
) -> str:
    """One forward; its outputs copied into ``outs`` (the judge's slots). Returns the structure it returned.

    Copying needs the exact shape and dtype; a mismatch is reported (the judge calls it incorrect), never coerced.
    """
    structure, outputs = structured_outputs(model(*args))
    _self_check(outputs, args)
    if structure != expected_structure:
        raise CallError(
            "structure",
            f"forward returned {_describe(structure)}, the reference returns {_describe(expected_structure)}",
        )
    for index, (tensor, slot) in enumerate(zip(outputs, outs, strict=True)):
        if tensor.shape != slot.shape or tensor.dtype != slot.dtype:
            raise CallError(
                "structure",
                f"output {index}: shape {tuple(tensor.shape)} {tensor.dtype}, expected "
                f"{tuple(slot.shape)} {slot.dtype}",
            )
        if tensor.device.type != slot.device.type:
            raise CallError("structure", f"output {index}: on {tensor.device}, expected {slot.device.type}")
        slot.copy_(tensor.detach())
    return structure


def _self_check(outputs: list[torch.Tensor], args: list[Any]) -> None:
    """What only this process can see, reported as the candidate's own hack (a report can only hurt it): an output
    that is a tensor subclass (a lazy or wrapping type) or that shares storage with an input."""
    subclasses = tensors.non_plain_tensors(outputs)
    if subclasses:
        raise CallError("hack:tensor_subclass", f"output is a tensor subclass ({', '.join(subclasses)})")
    if tensors.aliases(outputs, args):
        raise CallError(
            "hack:output_aliases_input",
            "output shares storage with an input (returns an input or a view of one)",
        )


def _describe(structure: str) -> str:
    if structure == "tensor":
        return "a tensor"
    kind, _, count = structure.partition(":")
    return f"a {kind} of {count} tensor(s)"


class Runner:
    """The runner's state: the candidate module, its built models, the mapped arena."""

    def __init__(self, channel: socket.socket, device: torch.device, work_dir: Path) -> None:
        self.channel = channel
        self.device = device
        self.work_dir = work_dir
        self.module: Any = None
        self.models: dict[int, torch.nn.Module] = {}
        self.built_buffers: dict[
            int, dict[str, torch.Tensor]
        ] = {}  # each model's buffers right after its build
        self.arena: exchange.MappedArena | None = None
        self.gate_events: tuple[Any, Any] | None = None  # events around the last gated batch's calls
        self.handover_scratch: torch.Tensor | None = (
            None  # what a dry batch's one kernel writes (stream_gate)
        )
        self.ledger: Any = None  # the started launch ledger (runner.launch_ledger), if any

    # ------------------------------------------------------------------------------------------ serving
    def serve(self) -> None:
        while True:
            message = wire.recv_message_blocking(self.channel)
            if message is None or message.get("type") == "bye":
                return
            handler = getattr(self, f"_on_{message.get('type')}", None)
            if handler is None:
                reply = {"type": "error", "error": f"unknown message type {message.get('type')!r}"}
            else:
                try:
                    reply = handler(message)
                except SystemExit as exc:  # from candidate code outside a forward (e.g. a property)
                    reply = {
                        "type": "error",
                        "kind": "exit",
                        "error": f"candidate raised SystemExit({exc.code!r})",
                    }
                except Exception as exc:  # noqa: BLE001 - reported to the judge, which decides what it means
                    reply = {"type": "error", "error": format_exception("runner failed", exc)}
            wire.send_message(self.channel, reply)

    def _on_ping(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"type": "pong"}

    def _on_sync(self, message: dict[str, Any]) -> dict[str, Any]:
        """After a gated run (``ipc.handover``), once the judge has opened its gate: this process's stream has run
        the calls; an asynchronous CUDA error of theirs is raised here and becomes the error reply."""
        synchronize(self.device)
        return {"type": "synced"}

    def _on_ledger(self, message: dict[str, Any]) -> dict[str, Any]:
        """Every kernel finished so far onto the ledger's descriptor, then the judge's marker."""
        if self.ledger is None:
            return {"type": "error", "error": "this runner has no launch ledger"}
        synchronize(self.device)
        self.ledger.flush(int(message["marker"]))
        return {"type": "ledger_flushed"}

    def _on_clock(self, message: dict[str, Any]) -> dict[str, Any]:
        """The GPU's clock read now (``common.gpu_clock``): the judge's second anchor for the ledger's records, just
        before the candidate is loaded. Refused once candidate code is loaded: a reading after it proves nothing."""
        if self.module is not None:
            return {"type": "error", "error": "clock after the candidate was loaded"}
        if self.ledger is None or self.device.type != "cuda":
            return {"type": "error", "error": "clock readings need a launch ledger on a GPU"}
        from kernel_reward.common.gpu_clock import read_now

        return {"type": "clock", "reading": read_now(self.device)}

    def _on_memory_cap(self, message: dict[str, Any]) -> dict[str, Any]:
        """Raise (or lower) this process's share of the GPU's memory: for an evaluation run alone. Refused once
        candidate code is loaded: from then on nothing this process does is trusted."""
        if self.module is not None:
            return {"type": "error", "error": "memory_cap after the candidate was loaded"}
        fraction = float(message["fraction"])
        if not 0 < fraction <= 1:
            return {"type": "error", "error": f"memory_cap fraction must be in (0, 1], got {fraction!r}"}
        if self.device.type == "cuda":
            torch.cuda.set_per_process_memory_fraction(fraction, self.device)
        return {"type": "memory_cap_ok", "fraction": fraction}

    def _on_arena(self, message: dict[str, Any]) -> dict[str, Any]:
        fds: list[int] = []
        expected = {"memfd": 1, "cuda_vmm": 2}.get(
            str(message.get("kind")), 0
        )  # memory (+ signal words, CUDA)
        if expected:  # the descriptors follow by SCM_RIGHTS
            _, fds, _, _ = socket.recv_fds(self.channel, 1, expected)
        if self.arena is not None:
            self.arena.close()
            self.arena = None
        self.arena = exchange.MappedArena(message, fds, self.device)
        return {"type": "arena_ok"}

    def _on_load(self, message: dict[str, Any]) -> dict[str, Any]:
        from kernel_reward.common.loading import write_and_import

        apply_tf32_policy(bool(message.get("allow_tf32", False)))
        try:
            self.module = write_and_import(str(message["code"]), self.work_dir, "cand")
        except SystemExit as exc:
            return {
                "type": "load_failed",
                "kind": "exit",
                "error": f"candidate raised SystemExit({exc.code!r}) at import",
            }
        except BaseException as exc:  # noqa: BLE001 - an import failure is the candidate's compile error
            return {
                "type": "load_failed",
                "kind": "import",
                "error": format_exception("candidate failed to import", exc),
            }
        return {"type": "loaded", "module": self.module.__name__}

    def _on_build(self, message: dict[str, Any]) -> dict[str, Any]:
        arena = self._arena()
        # Copies: a model that keeps an init tensor (an nn.Parameter around it, say) must not keep a view of the
        # arena, whose every byte the judge's later calls may be placed on (judge.placement).
        init = [_private(value) for value in exchange.decode_args(message["init"], arena)]
        state = {
            str(name): exchange.view(arena, exchange.TensorRef.from_json(ref))
            for name, ref in dict(message["state"]).items()
        }
        cls = getattr(self.module, "ModelNew", None)
        if cls is None:
            return {"type": "build_failed", "error": "candidate module defines no `ModelNew`"}
        torch.manual_seed(int(message["seed"]))
        try:
            model = cls(*init)
            if not isinstance(model, torch.nn.Module):
                return {
                    "type": "build_failed",
                    "error": f"ModelNew(...) built a {type(model).__name__}, not an nn.Module",
                }
            model = model.to(self.device)
        except SystemExit as exc:
            return {
                "type": "build_failed",
                "kind": "exit",
                "error": f"ModelNew raised SystemExit({exc.code!r})",
            }
        except Exception as exc:  # noqa: BLE001
            return {
                "type": "build_failed",
                "error": format_exception("ModelNew(*get_init_inputs()) raised", exc),
            }
        self.models[int(message["model"])] = model
        transfer = _transfer_state(state, model)
        self.built_buffers[int(message["model"])] = tensors.buffer_snapshot(model)
        return {"type": "built", "state_transfer": transfer}

    def _on_reset_buffers(self, message: dict[str, Any]) -> dict[str, Any]:
        """The model's buffers as they were right after its build (and the reference's state copied in): the judge
        does the same to the reference, so both sides' ``.eval()`` forwards read the same running statistics, however
        many training-mode forwards each side ran before."""
        model_id = int(message["model"])
        restored = tensors.restore_buffers(self.models[model_id], self.built_buffers[model_id])
        return {"type": "buffers_reset", "restored": restored}

    def _on_run(self, message: dict[str, Any]) -> dict[str, Any]:
        arena = self._arena()
        # a dry batch: the judge's calibration of this harness's own cost, before any candidate
        dry = bool(message.get("dry"))
        model = None if dry else self.models[int(message["model"])]
        gate = self._gate(message.get("gate"))
        reply: dict[str, Any] = {"type": "ran"}
        if (
            gate is not None
        ):  # a timed batch on the judge's GPU clock: queue everything behind the judge's flag
            stream_gate.wait_value(gate[1], gate[0])
            if self.gate_events is not None and self.gate_events[1].query():
                # Diagnostic for the judge's report (never a verdict): our own view of the previous batch.
                reply["previous_gpu_ms"] = self.gate_events[0].elapsed_time(self.gate_events[1])
            self.gate_events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            self.gate_events[0].record()
        try:
            if dry and gate is not None:
                stream_gate.handover_kernel(self._handover_scratch())
            reply["calls"] = self._run_calls(message["calls"], arena, model)
        finally:
            if gate is not None:  # always, so the judge's stream never waits for a word that will not come
                self.gate_events[1].record()
                stream_gate.write_value(gate[2], gate[0])
        if gate is None:
            synchronize(self.device)
        # A gated batch replies as soon as it is queued: the judge opens its gate only then, so synchronising here
        # would wait for ourselves. Asynchronous errors surface in the outputs the judge checks or at the next call.
        return reply

    def _handover_scratch(self) -> torch.Tensor:
        if self.handover_scratch is None:  # allocated once: a dry batch's kernel is then all it queues
            self.handover_scratch = torch.zeros(1, device=self.device)
        return self.handover_scratch

    def _gate(self, gate: Any) -> tuple[int, int, int] | None:
        """(batch number, flag address, done address) of a gated run, or None."""
        if gate is None:
            return None
        if self.arena is None or not isinstance(gate, dict) or not isinstance(gate.get("n"), int):
            raise exchange.ExchangeError(f"malformed gate {gate!r:.200}")
        return gate["n"], self.arena.word_address(gate.get("flag")), self.arena.word_address(gate.get("done"))

    def _run_calls(
        self, calls: list[dict[str, Any]], arena: torch.Tensor, model: Any
    ) -> list[dict[str, Any]]:
        from kernel_reward.runner.launches import LaunchMonitor

        reports: list[dict[str, Any]] = []
        for call in calls:
            args = exchange.decode_args(call["args"], arena)
            outs = [exchange.view(arena, exchange.TensorRef.from_json(ref)) for ref in call["out"]]
            if model is None:
                reports.append({"ok": True})
                continue
            context = MODES[str(call.get("mode", "no_grad"))]
            training = bool(
                call.get("train", True)
            )  # the reference's default (KernelGYM keeps training mode)
            if model.training != training:
                model.train(training)
            monitor = (
                LaunchMonitor(self.module.__name__, ablate=bool(call.get("ablate")))
                if call.get("monitor", True)
                else None
            )
            if monitor is not None and monitor.ablate:
                monitor.protect(args)
                monitor.protect(list(model.parameters()) + list(model.buffers()))
            report: dict[str, Any] = {"ok": True}
            tensors.seed_forward()  # as the judge does before the reference's forward (a dropout draws the same)
            try:
                if monitor is None:
                    with context():
                        execute_call(model, args, outs, str(call["structure"]))
                else:
                    with monitor.active(), context():
                        execute_call(model, args, outs, str(call["structure"]))
                    report.update(
                        launched=sorted({launch.name for launch in monitor.launches}),
                        own=sorted({launch.name for launch in monitor.candidate_launches}),
                    )
            except CallError as exc:
                report.update(ok=False, kind=exc.kind, error=str(exc))
            except SystemExit as exc:
                report.update(ok=False, kind="exit", error=f"forward raised SystemExit({exc.code!r})")
            except Exception as exc:  # noqa: BLE001
                report.update(
                    ok=False, kind="raised", error=format_exception("candidate forward raised", exc)
                )
            reports.append(report)
            if not report["ok"]:
                break
        return reports

    def _on_coverage(self, message: dict[str, Any]) -> dict[str, Any]:
        arena = self._arena()
        model = self.models[int(message["model"])]
        pool = [exchange.decode_args(args, arena) for args in message["inputs"]]
        return measure_coverage(
            model, self.module.__name__, pool, self.device, int(message["calls"]), str(message.get("method"))
        )

    def _arena(self) -> torch.Tensor:
        if self.arena is None:
            raise exchange.ExchangeError("no arena mapped yet")
        return self.arena.tensor


def measure_coverage(
    model: Any, module_name: str, pool: list[list[Any]], device: torch.device, calls: int, method: str
) -> dict[str, Any]:
    """The coverage reply: events (falling back to the profiler when a forward cannot be measured gap-free, and
    saying so) or the profiler; an error reply when neither could measure (the judge then only flags it)."""
    from kernel_reward.runner import profiling

    args = (model, module_name, pool, device, calls)
    flag = None
    try:
        if method == "events":
            try:
                profile = profiling.event_coverage(*args)
            except profiling.LaunchGapError as exc:
                flag = f"coverage_from_profiler: {exc}"[:300]
                profile = profiling.profile_candidate(*args)
        else:
            profile = profiling.profile_candidate(*args)
    except Exception as exc:  # noqa: BLE001 - diagnostics: the judge flags it, the verdict stands
        return {"type": "error", "error": f"{flag + '; ' if flag else ''}{type(exc).__name__}: {exc}"[:600]}
    table = [
        {
            "name": row.name,
            "device_time_ms": row.device_time_ms,
            "calls": row.calls,
            "from_candidate": row.from_candidate,
        }
        for row in profile.table
    ]
    return {"type": "coverage", "coverage": profile.coverage, "table": table, "flag": flag}


def _private(value: Any) -> Any:
    """Pure: ``value`` with every tensor in it (nested lists and tuples too) copied out of the arena."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, list | tuple):
        return type(value)(_private(item) for item in value)
    return value


def _transfer_state(state: dict[str, torch.Tensor], model: torch.nn.Module) -> dict[str, Any]:
    """Copy the judge's reference weights into the candidate where names, shapes and dtypes match; say which."""
    own = model.state_dict()
    copied, mismatch = [], []
    with torch.no_grad():
        for name, value in state.items():
            target = own.get(name)
            if target is None:
                continue
            if target.shape != value.shape or target.dtype != value.dtype:
                mismatch.append(name)
                continue
            target.copy_(value)
            copied.append(name)
    return {
        "copied": copied,
        "reference_only": sorted(set(state) - set(own)),
        "candidate_only": sorted(set(own) - set(state)),
        "shape_mismatch": mismatch,
        "reference_tensors": len(state),
    }
