"""The trusted judge: the whole verdict of one candidate, computed in a process the candidate cannot reach.

``judge(request, work_dir, timing_slot, runner, result, phases)`` drives one evaluation against a warm, sandboxed
runner (``ipc.runner_channel``): it loads the reference HERE (its source is never sent to the runner), draws every
input from hidden seeds, hands the runner the init arguments and the reference's weights, asks it for forwards on
inputs it places in the shared arena (``remote``), and decides correctness (``correctness``), timing
(``timing.measure`` on the clock of ``timing.batch_clock``), the speedup, the reward and the feedback from what
it sees in its own memory and on its own clock. Nothing the runner sends is a verdict: a malformed or early reply,
or its death, is the candidate's fault.

What still rests on the runner's word, and is flagged in every result that used it:
* ``launch_checks_self_reported``: which Triton kernels launched (no_kernel_launched) and the ablated call of the
  decoy check. A runner that forges them gains at most what its outputs are worth: outputs are always judged.
* ``coverage_self_reported``: the per-kernel times behind PR (whose rows are own, the judge reads in the source).
  Forged times raise the reward by at most ``pr_weight * (1 - true coverage)``, never make a wrong answer right.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernel_reward.common import loading, tensors
from kernel_reward.common.tensors import buffer_snapshot, make_inputs
from kernel_reward.ipc import exchange, placement
from kernel_reward.ipc.runner_channel import RunnerClient, RunnerProcess, read_load_clock
from kernel_reward.judge import compare, correctness, shapes
from kernel_reward.judge.coverage import CoverageMeasure, below_coverage_floor
from kernel_reward.judge.remote import (
    OutputSpec,
    RemoteCandidate,
    args_nbytes,
    build_remote,
    load_candidate,
    output_spec,
    share_arena,
    slot_bytes,
)
from kernel_reward.judge.seeds import fresh_seed
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, Status
from kernel_reward.screen.static_checks import triton_function_names
from kernel_reward.timing import batch_clock, batch_stats, gpu_state, measure, roofline
from kernel_reward.timing.prior import PriorExchange
from kernel_reward.timing.spans import Spans, unrecorded

ARENA_BYTES_GPU = 512 * 1024 * 1024  # shared slots for timed batches; large tasks get fewer calls per batch
ARENA_BYTES_CPU = 32 * 1024 * 1024


def judge(
    request: Any,
    code: str,
    work_dir: Path,
    timing_slot: Any,
    runner: RunnerProcess,
    result: EvalResult,
    phases: Any,
    device: torch.device,
    deadline: float | None = None,
    *,
    spans: Spans = unrecorded,
    priors: PriorExchange | None = None,
) -> None:
    """Fill ``result`` for one candidate (already screened; ``code`` extracted). Raises JudgeStop / RunnerFault.
    ``deadline``: time.monotonic() by which the runner must have answered (None: the service's wall clock).
    ``spans``: where the timing slot's steps are clocked (``timing.spans.SLOT_STEPS``). ``priors``: the service's
    store of timing baselines (``timing.prior``; None: every evaluation measures its own)."""
    options: EvalOptions = request.options
    client = RunnerClient(runner, deadline)
    seeds = correctness.trial_seeds(options.seed_base, options.num_trials + 4)
    result.flags.append("launch_checks_self_reported")

    with phases("load"):
        try:
            reference_module = loading.load_reference(request.reference_code, work_dir, request.entry_point)
        except Exception as exc:
            raise JudgeStop(
                Status.RUNTIME_ERROR,
                f"reference program failed to load (task problem): {type(exc).__name__}: {exc}",
                flag="reference_error",
                scored=False,  # before any candidate code: nothing here is the candidate's doing
            ) from exc
    try:
        _judge_loaded(
            request,
            code,
            reference_module,
            client,
            timing_slot,
            result,
            phases,
            spans,
            priors,
            device,
            seeds,
            options,
        )
    finally:
        loading.unload(reference_module)


@dataclass
class Reference:
    """The reference as the judge built it: its model, init arguments and weights, and what it returns."""

    module: Any
    model: torch.nn.Module
    init_inputs: list[Any]
    state: dict[str, torch.Tensor]
    spec: OutputSpec
    input_bytes: int  # one call's tensor inputs (the probe's, which is not kept: 6 GiB on a large task)
    slot_bytes: int  # one call's inputs and outputs in the exchange arena, aligned
    build_seed: int
    keeps_inputs: bool  # its forward left the probe's inputs as they were (batch_clock.BatchClock uses that)


def _judge_loaded(
    request: Any,
    code: str,
    reference_module: Any,
    client: RunnerClient,
    timing_slot: Any,
    result: EvalResult,
    phases: Any,
    spans: Spans,
    priors: PriorExchange | None,
    device: torch.device,
    seeds: list[int],
    options: EvalOptions,
) -> None:
    if device.type == "cpu":
        shapes.refuse_tasks_too_large_for_the_interpreter(reference_module)
    own_names = triton_function_names(code)  # which kernels can be the candidate's: the judge's reading
    # GPU work outside the timing slot runs under the slot's shared side (gpu_lock): never while a judge times.
    shared = getattr(timing_slot, "shared", None) or contextlib.nullcontext
    with phases("build"), shared("reference_build"):
        if device.type == "cuda":
            gpu_state.sample(device)  # NVML's start-up, here rather than inside the timing slot
        reference = build_reference(reference_module, request.entry_point, device, seeds[-1])
        if device.type == "cuda":
            result.memory["call_bytes"] = reference.input_bytes + reference.spec.nbytes
        arena = exchange.Arena(_arena_bytes(device, reference.state, reference.slot_bytes), device)
        if device.type == "cuda":  # device memory outside torch's allocator (and its cap), held to the end
            result.memory["arena_bytes"] = arena.nbytes
    try:
        share_arena(client, arena)
        clock = None
        if (
            device.type == "cuda" or options.host_clock_timing
        ):  # calibration, baseline: before the candidate's code
            key = measure.baseline_key(request, device, options)
            with phases("build"), shared("baseline_reuse"):  # another judge of the task measured it: no slot
                baseline = measure.reused_baseline(reference, arena, device, options, priors, key, spans)
            if baseline is None:
                with timing_slot(), phases("timing"):  # time in the slot, not queueing for it
                    baseline = measure.task_baseline(
                        reference, arena, device, options, client, seeds, spans, priors, key
                    )
            clock, overhead, before = baseline.clock, baseline.overhead, baseline.before
            bandwidth = baseline.prior.bandwidth_gbps
            clock.release()  # its private buffers are not needed again before the candidate's timing
        # Each GPU step holds the lock's shared side on its own: a judge waiting to time waits for one step.
        with phases("load"):
            with shared("load_clock"):
                read_load_clock(client)  # the ledger's second anchor, while no candidate code exists
            load_candidate(client, code, options.allow_tf32)  # host work: outside the shared side
        with phases("build"), shared("candidate_build"):
            result.state_transfer = build_remote(
                client, arena, 0, reference.build_seed, reference.init_inputs, reference.state
            )
        result.compiled = True
        calls = clock.calls if clock is not None else placement.CALLS_WITHOUT_CLOCK
        candidate = RemoteCandidate(client, arena, reference.spec, model_id=0, calls_per_batch=calls)
        task = correctness.JudgeTask(
            reference.module,
            reference.model,
            candidate,
            reference.init_inputs,
            result.state_transfer,
            reference.keeps_inputs,
            buffer_snapshot(reference.model),
        )
        coverage = CoverageMeasure(  # asked once: in the slot (events, the ledger) or after it (the profiler)
            candidate, reference.module, device, options, result, phases, seeds, own_names
        )
        with phases("correctness"):
            _check_correctness(task, device, options, seeds, result, shared)
        with phases("shape_check"), shared("shape_check"):
            _check_resized(request, client, arena, device, options, seeds, result)
        if clock is None:
            result.timing_available = False
            result.flags.append("timing_unavailable_interpreter")
        else:
            memory = measure.roofline_memory(reference.input_bytes, reference.spec.nbytes, clock, bandwidth)
            clock.restore()
            coverage.before_timing(clock)
            with timing_slot():
                _time_candidate(clock, candidate, client, overhead, before, options, result, phases, memory)
                if baseline.reused:
                    result.flags.append("timing_baseline_reused")
                    result.timing_method["baseline_prior"] = {"age_s": baseline.age_s, "uses": baseline.uses}
                clock.release()  # nothing after the timing needs its buffers (2 input + 2 output sets at most)
                # the ledger's window or the events pass: the device time of the calls, in the slot
                if device.type == "cuda" and coverage.in_slot():
                    with spans("slot.coverage"):
                        coverage()
            with phases("recheck"), shared("recheck"):  # a correctness trial: it needs the GPU, not the slot
                _recheck(task, device, options, seeds)
            # after the slot: the profiler's start-up (seconds) is never held in it
            if device.type == "cuda" and coverage.after_slot():
                with shared("coverage"):
                    coverage()
            floor = below_coverage_floor(result.coverage, options.min_coverage)
            if floor is not None:
                raise JudgeStop(Status.HACKED, floor, [correctness.HackReason.LOW_COVERAGE.value])
        result.status = Status.CORRECT
    finally:
        arena.close()


def build_reference(module: Any, entry_point: str, device: torch.device, probe_seed: int) -> Reference:
    """Build the reference under a fresh build seed and learn its output structure; a failure is the task's."""
    build_seed = fresh_seed()
    try:
        init_inputs = list(module.get_init_inputs())
        torch.manual_seed(build_seed)
        model = getattr(module, entry_point)(*init_inputs).to(device)
        probe = make_inputs(module, probe_seed, device)
        # Whether the forward writes into its inputs, from fingerprints rather than a copy of them (a 16 GiB input
        # would need 16 GiB more here): any write changes them; equal ones mean untouched but for a negligible
        # chance, which could only make the judge skip its private copy for a reference that needs one.
        before = compare.fingerprint(tensors.only_tensors(probe))
        with torch.no_grad():
            spec = output_spec(model(*probe))
        keeps_inputs = compare.fingerprint(tensors.only_tensors(probe)) == before
        input_bytes, slot = args_nbytes(probe, align=0), slot_bytes(probe, spec)
        del probe  # only its sizes are kept: it would hold one call's inputs for the whole evaluation
    except Exception as exc:
        raise JudgeStop(
            Status.RUNTIME_ERROR,
            f"reference model could not be built or run (task problem): {type(exc).__name__}: {exc}",
            flag="reference_error",
            scored=False,  # before the candidate's code is loaded
        ) from exc
    return Reference(
        module,
        model,
        init_inputs,
        dict(model.state_dict()),
        spec,
        input_bytes,
        slot,
        build_seed,
        keeps_inputs,
    )


def _check_correctness(
    task: correctness.JudgeTask,
    device: torch.device,
    options: EvalOptions,
    seeds: list[int],
    result: EvalResult,
    gpu_turn: Any = contextlib.nullcontext,
) -> None:
    trials, decoy = seeds[: options.num_trials], seeds[options.num_trials]  # [-3:]: recheck, resized, build
    report = correctness.check_correctness(task, device, options, trials, gpu_turn, decoy)
    result.correctness = report.details
    result.launched_kernels = report.launched_kernels
    if device.type == "cpu" and "torch.bfloat16" in report.details.get("output_dtypes", []):
        result.flags.append("bf16_under_interpreter_unreliable")  # background §7: silently wrong there
    if report.passed:
        return
    stop = report.stop or JudgeStop(Status.RUNTIME_ERROR, "correctness check failed")
    if stop.status == Status.RUNTIME_ERROR and "CompilationError" in str(stop):
        result.compiled = False
        stop = JudgeStop(Status.COMPILE_ERROR, str(stop), stop.hack_reasons)
    raise stop


def _check_resized(
    request: Any,
    client: RunnerClient,
    arena: exchange.Arena,
    device: torch.device,
    options: EvalOptions,
    seeds: list[int],
    result: EvalResult,
) -> None:
    result.shape_generalization = shapes.check_shape_generalization(
        request.reference_code, client, arena, request.entry_point, device, options, seeds[-2]
    )
    if options.shape_check == "fail" and result.shape_generalization.get("passed") is False:
        raise JudgeStop(
            Status.INCORRECT, "wrong at resized inputs: " + str(result.shape_generalization.get("reason"))
        )


def _recheck(
    task: correctness.JudgeTask, device: torch.device, options: EvalOptions, seeds: list[int]
) -> None:
    """One more trial after timing: the answer must still be right."""
    report = correctness.recheck(task, device, options, seeds[-3])
    if not report.passed:
        stop = report.stop or JudgeStop(Status.RUNTIME_ERROR, "re-check failed")
        # a failure after timing that names no hack is a runtime error, whatever the check saw
        raise JudgeStop(
            Status.HACKED if stop.hack_reasons else Status.RUNTIME_ERROR, str(stop), stop.hack_reasons
        )


def _arena_bytes(device: torch.device, state: dict[str, torch.Tensor], slot: int) -> int:
    """Room for the reference's weights, or for as many call slots of ``slot`` bytes (inputs + outputs) as the
    budget holds: at least one, so a task larger than the budget still runs (one call per timed batch). Everything
    the judge keeps beside it for timing (staged inputs, the reference's outputs) scales with it too."""
    state_bytes = sum(t.numel() * t.element_size() + exchange.ALIGN for t in state.values())
    budget = ARENA_BYTES_GPU if device.type == "cuda" else ARENA_BYTES_CPU
    slots = max(1, min(measure.MAX_CALLS_PER_BATCH, budget // max(slot, 1)))
    return max(state_bytes, slots * slot)


# ------------------------------------------------------------------------------------------------ timing


def _time_candidate(
    clock: batch_clock.BatchClock,
    candidate: RemoteCandidate,
    client: RunnerClient,
    overhead: batch_stats.Overhead,
    before: list[float],
    options: EvalOptions,
    result: EvalResult,
    phases: Any,
    memory: tuple[int, float] | None,
) -> None:
    """``memory``: the bytes one call must move and the device's measured bandwidth (GB/s), for the roofline (None
    on the host clock: no roofline, no GPU state)."""
    spans = clock.spans

    def retime() -> batch_stats.BatchTiming:
        return measure.measure(clock, candidate, client, overhead, before, options, step="slot.retime")

    with phases("timing"):
        with spans("slot.gpu_state"):
            state_before = gpu_state.sample(clock.device) if memory is not None else None
        try:
            timing = measure.compare_timed(clock, candidate, client, overhead, before, options)
            remeasured = timing.speedup > options.implausible_speedup
            if remeasured:
                result.flags.append("implausible_speedup_remeasured")
                timing = retime()
                if timing.speedup > options.implausible_speedup:
                    result.flags.append("implausible_speedup")
                    if batch_stats.calibration_artefact(timing):
                        timing = batch_stats.unsubtracted(timing)
            # one re-measurement at most: a speedup already re-measured as implausible is not timed a third time
            roof = None
            if memory is not None:
                timing, roof = roofline.review(timing, *memory, None if remeasured else retime, result.flags)
        except batch_clock.OwnKernelMissing as exc:
            raise JudgeStop(
                Status.HACKED, str(exc), [correctness.HackReason.TIMED_WITHOUT_OWN_KERNEL.value]
            ) from exc
        except batch_clock.TimingValidationError as exc:
            raise JudgeStop(
                Status.HACKED, str(exc), [correctness.HackReason.INCORRECT_DURING_TIMING.value]
            ) from exc
        if state_before is not None:
            with spans("slot.gpu_state"):
                result.gpu_state = gpu_state.around(state_before, gpu_state.sample(clock.device))
    result.timing_available = True
    result.flags.extend(timing.flags)
    if options.baseline != "eager":
        result.flags.append(f"baseline_{options.baseline}")
    result.timing_method = timing.describe()
    result.reference_timing, result.kernel_timing = timing.reference, timing.candidate
    result.reference_time_ms, result.kernel_time_ms = timing.reference.median_ms, timing.candidate.median_ms
    result.speedup, result.speedup_ci = timing.speedup, timing.speedup_ci
    if roof is None:
        result.flags.append("timing_host_clock_interpreter")  # interpreter times: nothing to read from them
        return
    result.roofline = roof.to_dict()
    result.speedup, result.speedup_ci, clamped = roofline.clamp_speedup(
        result.speedup, result.speedup_ci, roof
    )
    if clamped:
        result.flags.append("speedup_clamped_to_roofline")
