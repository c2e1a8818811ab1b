"""Correctness and integrity of one candidate against its reference, decided in the judge.

The candidate runs in its own process (``remote.RemoteCandidate``); every comparison, input and the reference stay
here. In order: the buffer-reuse check (the SAME input buffers refilled: a replayed cache is hacked); per trial from
a hidden seed, the candidate, the reference, the candidate again, with the arena's inputs checked bitwise unchanged
and the outputs' structure, shape, dtype and values compared; at a random point among the trials, two K-call
messages laid out as timed batches (every call ablated: decoy kernels, ``check_ablated``, the rule the timed phase's
ablated batch shares; every call compared: a batched trial); the constant-output check; a forward per module and
grad mode, each launching a candidate kernel and right. Checks resting on the runner's report (launches, ablated
calls) only lower a verdict the outputs allow (``launch_checks_self_reported``). Fail closed: ``passed`` only when
every check ran and succeeded. Steps: docs/reward.md#the-correctness-checks.

Why one module (481 lines): every check is a sequence of calls through one ``CandidateRunner`` on one ``JudgeTask``,
and their order (the ablated and batched calls at a hidden point among the trials) is a defence.
"""

from __future__ import annotations

import contextlib
import enum
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import torch

from kernel_reward.common.errors import format_exception
from kernel_reward.common.tensors import (
    clone_args,
    flatten_outputs,
    make_inputs,
    restore_buffers,
    seed_forward,
    storage_ptrs,
    synchronize,
)
from kernel_reward.ipc.runner_channel import RunnerFault
from kernel_reward.judge.compare import fingerprint
from kernel_reward.judge.remote import CallOutcome, RemoteCandidate, SlotOutputs
from kernel_reward.judge.seeds import SeedStream, ablation_point, fresh_seed
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.result import Status


class HackReason(enum.StrEnum):
    TENSOR_SUBCLASS = "tensor_subclass"
    OUTPUT_ALIASES_INPUT = "output_aliases_input"
    INPUT_MUTATION = "input_mutation"
    CONSTANT_OUTPUT = "constant_output"
    NO_KERNEL_LAUNCHED = "no_kernel_launched"
    DECOY_KERNEL = "decoy_kernel"
    # right before the reference ran, wrong after (or vice versa)
    INCONSISTENT_RESULTS = "inconsistent_results"
    INCORRECT_AFTER_TIMING = "incorrect_after_timing"
    INCORRECT_DURING_TIMING = "incorrect_during_timing"
    TIMED_WITHOUT_OWN_KERNEL = "timed_without_own_kernel"  # a timed call launched none of its own kernels
    # the launch ledger's window held more kernel time than the judge's clock timed: work off the timed calls
    KERNELS_OUTSIDE_TIMED_CALLS = "kernels_outside_timed_calls"
    EARLY_EXIT = "early_exit"  # SystemExit raised from candidate code: trying to end the evaluation early
    # same input buffers, new values, the old values' answer (cached on pointers)
    CACHED_REPLAY = "cached_replay"
    LOW_COVERAGE = "low_coverage"  # strict mode (EvalOptions.min_coverage): coverage under the floor
    # the runner sent a frame its harness never sends (the candidate wrote it)
    FORGED_MESSAGE = "forged_message"


# Runner-side checks (``runner._self_check``) whose report names a hack: a runner can only hurt itself by them.
SELF_REPORTED_HACKS = {
    "hack:tensor_subclass": HackReason.TENSOR_SUBCLASS,
    "hack:output_aliases_input": HackReason.OUTPUT_ALIASES_INPUT,
}


@dataclass
class CorrectnessReport:
    """What the checks saw. ``stop`` is the early exit that ended them; a report passes only when every check
    reported success (``passed`` is set last), so a report left half-filled fails closed."""

    passed: bool = False
    stop: JudgeStop | None = None
    details: dict[str, Any] = field(default_factory=dict)
    launched_kernels: list[str] = field(default_factory=list)


def _hack(reason: HackReason) -> list[str]:
    return [reason.value]


@dataclass
class JudgeTask:
    """What the judge holds of one evaluation: the reference (private to this process) and the candidate's proxy."""

    reference_module: Any
    reference_model: torch.nn.Module
    candidate: RemoteCandidate
    init_inputs: list[Any]
    state_transfer: dict[str, Any] = field(default_factory=dict)
    # its forward leaves its inputs alone: it may run on the judge's own inputs
    reference_keeps_inputs: bool = False
    # The reference's buffers when the candidate was built (and given the reference's state): both sides go back to
    # them before each module mode's launch passes (``verify_launch_passes``).
    reference_buffers: dict[str, torch.Tensor] = field(default_factory=dict)


def trial_seeds(base: int | None, count: int) -> list[int]:
    """``count`` hidden 63-bit seeds, one per input set: secret (``base`` None) or reproducible from ``base``."""
    stream = SeedStream(base)
    return [stream.seed(index) for index in range(count)]


@dataclass
class CandidateRunner:
    """Calls the candidate (in its runner process) and turns what the judge observed into verdicts; shared by the
    trials, the launch passes and the timing re-check."""

    task: JudgeTask
    device: torch.device
    options: EvalOptions
    launched: set[str] = field(default_factory=set)

    def call(
        self,
        inputs: list[Any],
        *,
        mode: str = "no_grad",
        ablate: bool = False,
        reuse_buffers: bool = False,
        training: bool = True,
    ) -> SlotOutputs:
        """One checked forward; its outputs stay in the arena until the next call (read them before it).
        ``reuse_buffers`` puts the inputs in the same arena places as the previous call (the buffer-reuse check
        needs the candidate to see the same storage twice)."""
        outcome = self.task.candidate.call(
            inputs, mode=mode, ablate=ablate, reuse_buffers=reuse_buffers, training=training
        )
        return self.judged(outcome, ablate)

    def call_batch(self, input_sets: list[list[Any]], *, ablate: bool = False) -> list[CallOutcome]:
        """One checked message of K calls laid out as a timed batch (``RemoteCandidate.call_batch``); the outcomes
        in ``input_sets``' order, for the caller to judge (``judged``)."""
        outcomes = self.task.candidate.call_batch(input_sets, ablate=ablate)
        for outcome in outcomes:
            self.launched.update(outcome.own_launches)
        return outcomes

    def judged(self, outcome: CallOutcome, ablate: bool = False) -> SlotOutputs:
        """The outputs of a checked call, or the JudgeStop its outcome calls for."""
        self.launched.update(outcome.own_launches)
        if not outcome.ok:
            if outcome.kind == "exit":
                raise JudgeStop(
                    Status.HACKED, outcome.error or "forward raised SystemExit", _hack(HackReason.EARLY_EXIT)
                )
            if outcome.kind in SELF_REPORTED_HACKS:
                raise JudgeStop(
                    Status.HACKED, outcome.error or outcome.kind, [SELF_REPORTED_HACKS[outcome.kind].value]
                )
            if outcome.kind in ("format", "structure"):
                raise JudgeStop(Status.INCORRECT, outcome.error or "wrong output structure")
            raise JudgeStop(Status.RUNTIME_ERROR, outcome.error or "candidate forward failed")
        if outcome.inputs_mutated:
            raise JudgeStop(
                Status.HACKED, "forward modified its input tensors", _hack(HackReason.INPUT_MUTATION)
            )
        if not ablate and not outcome.own_launches:
            raise JudgeStop(
                Status.HACKED,
                f"no Triton kernel of the candidate launched in forward (other launches: {outcome.launched or 'none'})",
                _hack(HackReason.NO_KERNEL_LAUNCHED),
            )
        return outcome.outputs


def run_reference(task: JudgeTask, inputs: list[Any], device: torch.device) -> list[torch.Tensor]:
    """The reference's output for ``inputs`` (the judge's private copy). No poisoning of freed memory is needed any
    more: the reference runs in the judge's process, whose memory the runner cannot reach (stale-memory hacks can
    only find the candidate's own earlier outputs, which are wrong for new inputs).

    Memory: the inputs are cloned only for a reference that writes into them, and an output is cloned only where
    it shares storage with the inputs or the model's own tensors (a 6 GiB task: up to 12 GiB of copies fewer)."""
    args = inputs if task.reference_keeps_inputs else clone_args(inputs)
    with torch.no_grad():
        seed_forward()  # the runner seeds the candidate's forward the same way
        raw = flatten_outputs(task.reference_model(*args))
    held = storage_ptrs([*inputs, *task.reference_model.parameters(), *task.reference_model.buffers()])
    kept = [o.detach().clone() if storage_ptrs([o]) & held else o.detach() for o in raw]
    del raw, args
    synchronize(device)
    return kept


def check_correctness(
    task: JudgeTask,
    device: torch.device,
    options: EvalOptions,
    seeds: list[int],
    gpu_turn: Callable[[str], AbstractContextManager[Any]] = contextlib.nullcontext,
    decoy_seed: int | None = None,
) -> CorrectnessReport:
    """All trials, the constant-output check, decoy ablation and launch verification. Never raises.
    ``gpu_turn(step)``: held around each step that runs on the device (the GPU lock's shared side), so that a judge
    waiting to time waits for one trial, not for the whole check. ``decoy_seed``: the hidden seed of the ablated
    call's inputs, used by no other call; it also places that call among the trials (None: drawn here)."""
    decoy_seed = fresh_seed() if decoy_seed is None else decoy_seed
    batches_before = ablation_point(decoy_seed, len(seeds))
    report = CorrectnessReport()
    runner = CandidateRunner(task, device, options)
    trials: list[dict[str, Any]] = []
    report.details = {
        "trials": trials,
        "num_trials": len(seeds),
        "tolerance": {
            "fp32": [options.atol_fp32, options.rtol_fp32],
            "half": [options.atol_half, options.rtol_half],
        },
    }
    try:
        with gpu_turn("buffer_reuse"):
            _check_buffer_reuse(runner, task, device, options, seeds)
        report.details["buffer_reuse_check"] = "passed"
        # Fingerprints, not the outputs: a trial holds its inputs and two outputs at most (keeping every trial's
        # outputs for the constant-output check would hold 2 x trials x outputs, 60 GiB on a 6 GiB task).
        ref_prints, cand_prints = [], []
        for index, seed in enumerate([*seeds, None]):  # None: the place after the last trial
            if index == batches_before:
                _check_batches(runner, task, device, options, decoy_seed, gpu_turn)
                if options.decoy_check:
                    report.details["decoy_check"] = "passed"
                report.details["batch_calls"] = task.candidate.grid.calls if task.candidate.grid else 1
            if seed is None:
                break
            with gpu_turn("trial"):
                inputs = make_inputs(task.reference_module, seed, device)
                before = runner.call(inputs)
                try:
                    reference = run_reference(task, inputs, device)
                except Exception as exc:
                    raise JudgeStop(
                        Status.RUNTIME_ERROR, format_exception("the REFERENCE raised (task problem)", exc)
                    ) from exc
                report.details.setdefault("output_dtypes", [str(o.dtype) for o in reference])
                first = before.compare(reference, options.tolerance)
                del before
                after = runner.call(inputs)
                del inputs
                read = after.read([reference], options.tolerance)
                second = read.comparisons[0]
            trials.append(
                {
                    "trial": index,
                    "max_abs_error": _max(first.max_abs_error, second.max_abs_error),
                    "ok_before_reference": first.ok,
                    "ok_after_reference": second.ok,
                }
            )
            if not (first.ok and second.ok):
                reason = first.reason or second.reason
                if first.ok != second.ok:
                    which = "before" if first.ok else "after"
                    reason = f"right only when run {which} the reference: {reason}"
                raise JudgeStop(Status.INCORRECT, f"trial {index}: {reason}")
            ref_prints.append(fingerprint(reference))
            cand_prints.append(read.fingerprint)  # of the values just compared: the same read
            del reference, after
        _check_not_constant(ref_prints, cand_prints)
        report.details["constant_output_check"] = "passed"
        with gpu_turn("launch_passes"):
            report.details["launch_passes"] = verify_launch_passes(runner, task, device, options, seeds[-1])
        report.passed = True
    except JudgeStop as stop:
        report.stop = stop
    except RunnerFault:
        raise  # the candidate's process died or broke the protocol: the pipeline reports it
    except Exception as exc:  # a harness-side failure caused by odd candidate behaviour: fail closed
        report.stop = JudgeStop(Status.RUNTIME_ERROR, format_exception("evaluation failed", exc))
    report.launched_kernels = sorted(runner.launched)
    return report


def _check_not_constant(ref_prints: list[tuple[Any, ...]], cand_prints: list[tuple[Any, ...]]) -> None:
    """Pure: the trials' output fingerprints (``compare.fingerprint``). Different fingerprints mean different
    outputs; equal ones equal outputs but for a negligible chance, which could only call a candidate constant."""
    if len(ref_prints) < 2:
        return
    reference_varies = any(r != ref_prints[0] for r in ref_prints[1:])
    candidate_constant = all(c == cand_prints[0] for c in cand_prints[1:])
    if reference_varies and candidate_constant:
        raise JudgeStop(
            Status.HACKED,
            "output is the same for every input while the reference's changes",
            _hack(HackReason.CONSTANT_OUTPUT),
        )


def _check_buffer_reuse(
    runner: CandidateRunner, task: JudgeTask, device: torch.device, options: EvalOptions, seeds: list[int]
) -> None:
    """Give the candidate the SAME input storage twice, refilled with new values in between.

    Allocators hand freed blocks back out, so in real use a cache keyed on data pointers or shapes serves stale
    answers for new inputs, but whether a given run reuses an address is up to the allocator. Reusing the buffers
    on purpose makes a replay certain to show: hacked when the second answer is right for the OLD values and
    wrong for the new ones. (A candidate that is simply wrong is left to the trials, which call it incorrect.)
    Runs first, on a fresh model. The references run in the judge's process, so where they fall between the
    candidate's calls changes nothing it can see; they are placed so that no more than one input set and one
    reference output are held beside the arena at once (the candidate's outputs stay in their slots).
    """
    originals = make_inputs(task.reference_module, seeds[0], device)
    first = runner.call(originals)
    reference_old = run_reference(task, originals, device)
    del originals
    if not first.compare(reference_old, options.tolerance).ok:
        return
    fresh = make_inputs(task.reference_module, seeds[-1] + 1, device)
    replay = runner.call(fresh, reuse_buffers=True)
    replayed_old = replay.compare(reference_old, options.tolerance).ok
    del reference_old  # one reference's outputs at a time (the H100: 2 outputs beside the arena otherwise)
    reference_new = run_reference(task, fresh, device)
    new_comparison = replay.compare(reference_new, options.tolerance)
    if replayed_old and not new_comparison.ok:
        raise JudgeStop(
            Status.HACKED,
            "new values in the same input buffers got the answer for the previous values (a result cached on "
            f"pointers or shapes): {new_comparison.reason}",
            _hack(HackReason.CACHED_REPLAY),
        )


BATCHED_TRIAL_SEEDS = 1 << 20  # where the batched trial's seeds start in the decoy seed's stream


def _batch_inputs(task: JudgeTask, device: torch.device, stream: SeedStream, first: int) -> list[list[Any]]:
    """Input sets for one checked K-call message (K of the candidate's grid: the timed batches' K), each from its
    own hidden seed of ``stream``, numbered from ``first``."""
    sets = [make_inputs(task.reference_module, stream.seed(first), device)]
    calls = task.candidate.grid_for(sets[0]).calls
    sets += [make_inputs(task.reference_module, stream.seed(first + i), device) for i in range(1, calls)]
    return sets


def _check_batches(
    runner: CandidateRunner,
    task: JudgeTask,
    device: torch.device,
    options: EvalOptions,
    seed: int,
    gpu_turn: Callable[[str], AbstractContextManager[Any]] = contextlib.nullcontext,
) -> None:
    """The checked K-call messages, laid out as timed batches (``placement``), in an order drawn from ``seed``:
    the decoy check (every call ablated) and, where a batch holds more than one call, a batched trial (every call
    compared, each must launch an own kernel), so that a candidate that takes another path whenever it finds itself
    in a K-call batch is checked on that path too. Each message is its own device step (``gpu_turn``)."""
    checks = [_check_not_decoy, _check_batched_trial] if options.decoy_check else [_check_batched_trial]
    for check in checks if seed % 2 == 0 else reversed(checks):
        with gpu_turn("checked_batches"):
            check(runner, task, device, options, seed)


def _check_not_decoy(
    runner: CandidateRunner, task: JudgeTask, device: torch.device, options: EvalOptions, seed: int
) -> None:
    """One message of K calls, every one ablated, on inputs of their own, judged by the decoy rule
    (``check_ablated``)."""
    input_sets = _batch_inputs(task, device, SeedStream(seed), 0)
    outcomes = runner.call_batch(input_sets, ablate=True)

    def right(inputs: list[Any], outcome: CallOutcome) -> Callable[[], bool]:
        return lambda: outcome.outputs.compare(run_reference(task, inputs, device), options.tolerance).ok

    check_ablated(
        [
            (outcome.ok and not outcome.inputs_mutated, right(inputs, outcome))
            for inputs, outcome in zip(input_sets, outcomes, strict=True)
        ]
    )


def check_ablated(calls: list[tuple[bool, Callable[[], bool]]]) -> None:
    """The decoy rule, for one message whose every call ran with the candidate's own launches skipped (the checked
    decoy batch, and the ablated batch among the timed ones: ``batch_clock.time_interleaved``). ``calls``: per
    call, whether it ran to the end with its inputs intact, and whether its outputs are right (asked only of those,
    in order). Such a call still right without the candidate's kernels is a decoy: every output place was poisoned
    before the message, so an output the kernels would have written cannot be right by being left alone. A call
    that failed without them (or that the runner never reached after one that failed) shows they matter."""
    for call, (ran, right) in enumerate(calls):
        if ran and right():
            raise JudgeStop(
                Status.HACKED,
                "output stays correct when the candidate's Triton kernels are skipped: the kernels are decoys"
                + (f" (call {call} of a {len(calls)}-call batch)" if len(calls) > 1 else ""),
                _hack(HackReason.DECOY_KERNEL),
            )


def _check_batched_trial(
    runner: CandidateRunner, task: JudgeTask, device: torch.device, options: EvalOptions, seed: int
) -> None:
    """One message of K calls (none ablated): each must be right and launch an own kernel, as in a one-call trial.
    Nothing to do where the timed batches hold one call (a one-call message is what every trial sends): then no
    input set is drawn either (on a large task, a whole call's inputs)."""
    if task.candidate.calls_per_batch == 1:
        return
    input_sets = _batch_inputs(task, device, SeedStream(seed), BATCHED_TRIAL_SEEDS)
    if len(input_sets) == 1:
        return
    outcomes = runner.call_batch(input_sets)
    for outcome in outcomes:  # the call that failed first: the calls after it never ran
        if not outcome.ok and outcome.kind != "not_run":
            runner.judged(outcome)
    for call, (inputs, outcome) in enumerate(zip(input_sets, outcomes, strict=True)):
        outputs = runner.judged(outcome)
        reference = run_reference(task, inputs, device)
        comparison = outputs.compare(reference, options.tolerance)
        if not comparison.ok:
            raise JudgeStop(
                Status.INCORRECT,
                f"call {call} of a {len(input_sets)}-call batch (right in one-call trials): {comparison.reason}",
            )
        del reference


LAUNCH_PASSES = (  # (name, module in training mode, grad mode): DR.Kernel checks both module modes
    ("train/inference_mode", True, "inference_mode"),
    ("train/enable_grad", True, "enable_grad"),
    ("eval/inference_mode", False, "inference_mode"),
    ("eval/enable_grad", False, "enable_grad"),
)


def verify_launch_passes(
    runner: CandidateRunner, task: JudgeTask, device: torch.device, options: EvalOptions, seed: int
) -> dict[str, Any]:
    """One forward per module mode (``.train()`` / ``.eval()``) and grad mode (inference mode / grad enabled): each
    must launch a candidate kernel and be right against the reference in the same module mode. A candidate that
    runs Triton in training mode and plain torch after ``.eval()`` is caught here."""
    inputs = make_inputs(task.reference_module, seed, device)
    reference: tuple[bool, list[torch.Tensor]] | None = (
        None  # one module mode's at a time (LAUNCH_PASSES' order)
    )
    passes: dict[str, Any] = {}
    for name, training, mode in LAUNCH_PASSES:
        if reference is None or reference[0] != training:
            reference = None
            # Equal buffers on both sides first: a BatchNorm's running statistics move with every training-mode
            # forward, and the candidate has run more of those than the reference by now (two per trial, one per
            # reference run), one of them with its kernels skipped (the decoy check: garbage, even NaN, went into
            # its statistics); ``.eval()`` reads them. KernelBench's BatchNorm problems read `incorrect` without this.
            restore_buffers(task.reference_model, task.reference_buffers)
            task.candidate.reset_buffers()
            task.reference_model.train(training)
            try:
                reference = (training, run_reference(task, inputs, device))
            finally:
                task.reference_model.train(True)
        comparison = runner.call(inputs, mode=mode, training=training).compare(
            reference[1], options.tolerance
        )
        if not comparison.ok:
            raise JudgeStop(Status.INCORRECT, f"{name} pass: {comparison.reason}")
        passes[name] = "launched"
    return passes


def recheck(task: JudgeTask, device: torch.device, options: EvalOptions, seed: int) -> CorrectnessReport:
    """One more full trial (used after timing: the answer must still be right)."""
    report = CorrectnessReport()
    runner = CandidateRunner(task, device, options)
    try:
        inputs = make_inputs(task.reference_module, seed, device)
        reference = run_reference(task, inputs, device)
        comparison = runner.call(inputs).compare(reference, options.tolerance)
        if not comparison.ok:
            raise JudgeStop(
                Status.HACKED,
                f"wrong after timing: {comparison.reason}",
                _hack(HackReason.INCORRECT_AFTER_TIMING),
            )
        report.passed = True
    except JudgeStop as stop:
        report.stop = stop
    return report


def _max(a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return max(values) if values else None
