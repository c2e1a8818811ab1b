"""The trusted side of ONE evaluation, in the CURRENT process: the seam between the judge and the service.

``evaluate_request(request, work_dir=..., timing_slot=..., runner=...)`` screens the candidate (no candidate code
runs), judges it (``verdict.judge``) against a warm sandboxed runner (forked by ``runner.process`` in the pool,
exec'd by ``ipc.runner_channel`` on the one-shot path) and returns an ``EvalResult`` whose status, reward and
feedback are computed here, never taken from the runner. It never raises for anything the candidate does; faults
that kill the pair (hangs, memory) are the execution service's to catch. ``timing_slot``, a context-manager
factory from the service, wraps only the timing phases, so at most one candidate is timed per GPU at a time.
``prepare_worker`` and ``preimport`` (``runtime``) pay what does not depend on a candidate. CPU mode needs
``TRITON_INTERPRET=1`` before triton is first imported (``main`` sets it; ``runtime.ensure_interpreter_env``).

One-shot CLI (also the "fresh process per evaluation" baseline: this process judges, one fresh runner runs):
    python -m kernel_reward.judge.pipeline --request REQ.json --out RESULT.json [--work-dir DIR]

See docs/reward.md#two-processes-judge-and-runner.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from kernel_reward import runtime
from kernel_reward.ipc.runner_channel import RunnerFault
from kernel_reward.judge.feedback import redact_error, render_feedback
from kernel_reward.judge.stop import JudgeStop
from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status
from kernel_reward.reward import compute_reward
from kernel_reward.runtime import (  # noqa: F401  (the zygote calls a worker module's preimport)
    Mode,
    WorkerInfo,
    apply_tf32_policy,
    ensure_interpreter_env,
    mode_of,
    preimport,
)
from kernel_reward.sandbox import SandboxPolicy
from kernel_reward.screen.screen import screen_candidate
from kernel_reward.timing.prior import PriorExchange
from kernel_reward.timing.spans import SpanClock

log = logging.getLogger(__name__)


TimingSlot = Callable[[], AbstractContextManager[Any]]


JUDGES_A_RUNNER = True  # the zygote forks a sandboxed runner for each judge child (zygote._child_main)


def _phase(phases: dict[str, float], name: str) -> AbstractContextManager[None]:
    return SpanClock(phases)(name)


def prepare_worker(device: str | None = None, *, triton_check: bool = True) -> WorkerInfo:
    """``runtime.prepare_worker``, then the judge's own kernel (the output seal's fingerprint) compiled or loaded
    from Triton's cache, so that no evaluation pays it inside the timing slot. The zygote's seed-cache build calls
    this too, so every judge child finds the compiled kernel in its cache and only loads it while warming."""
    info = runtime.prepare_worker(device, triton_check=triton_check)
    if info.mode is Mode.GPU and "seal_kernel" not in info.warmup_seconds:
        import torch

        from kernel_reward.timing import output_seal

        start = time.perf_counter()
        output_seal.warm_up(torch.device(info.device))
        info.warmup_seconds["seal_kernel"] = round(time.perf_counter() - start, 4)
    return info


def evaluate_request(
    request: EvalRequest,
    *,
    work_dir: Path,
    device: str | None = None,
    timing_slot: TimingSlot = nullcontext,
    runner: Any = None,
    priors: PriorExchange | None = None,
    launch_ledger: bool = False,
) -> EvalResult:
    """Judge one candidate from this process against ``runner`` (a warm ``runner_channel.RunnerProcess``; None:
    start a fresh one for this evaluation, with the launch ledger when ``launch_ledger``). ``device``: where this
    worker runs it (the pool's device; None: the request's). ``priors``: the service's store of timing baselines
    (``timing.prior``). Never raises for candidate faults."""
    device = device or request.device
    mode = mode_of(device)
    result = EvalResult(mode=mode)  # known up front: the reward of an early failure depends on it
    phases: dict[str, float] = {}
    start = time.perf_counter()
    code: str | None = None
    try:
        code = _screened_code(request, phases)
        pipeline_args = (request, code, device, Path(work_dir), timing_slot, result, phases, runner, priors)
        _run_pipeline(*pipeline_args, launch_ledger)
    except JudgeStop as stop:
        apply_stop(result, stop)
    except SystemExit as exc:  # candidate code (e.g. ModelNew.__init__) tried to end the evaluation early
        apply_stop(
            result,
            JudgeStop(Status.HACKED, f"candidate code raised SystemExit({exc.code!r})", ["early_exit"]),
        )
    except Exception as exc:
        if (
            type(exc).__name__ == "OutOfMemoryError"
        ):  # torch's, raised outside the candidate's own guarded calls
            # Neither a harness bug nor proof of a bad candidate: the task does not fit this worker's GPU memory
            # cap (the pool gives each worker 0.9 / workers of the GPU). Say so, so operators can use fewer workers.
            apply_stop(
                result,
                JudgeStop(
                    Status.RUNTIME_ERROR,
                    f"{JUDGE_OUT_OF_MEMORY} (fewer workers per GPU raise it): {exc}"[:2000],
                ),
            )
        else:  # a harness-side failure: fail closed, keep the traceback for the developers
            log.exception("evaluation pipeline failed")
            apply_stop(
                result,
                JudgeStop(
                    Status.CRASHED if result.status == Status.CRASHED else Status.RUNTIME_ERROR,
                    f"internal evaluator error: {type(exc).__name__}: {exc}\n{traceback.format_exc()[-2000:]}",
                    flag="evaluator_error",
                ),
            )
    # the GPU lock's waits and holds (service.gpu_lock.LOCK_SPANS), beside the phases they happened in
    phases.update(getattr(timing_slot, "seconds", None) or {})
    _finish(result, request.options, phases, start, code)
    return result


def apply_stop(result: EvalResult, stop: JudgeStop) -> None:
    """Write an early exit into the result: the one place a failure's status is set on the judge's side."""
    result.status = stop.status
    result.error = str(stop)
    result.hack_reasons.extend(r for r in stop.hack_reasons if r not in result.hack_reasons)
    if stop.flag and stop.flag not in result.flags:
        result.flags.append(stop.flag)
    result.scored = result.scored and stop.scored


def stop_from_fault(fault: RunnerFault) -> JudgeStop:
    """The verdict of a runner that died, timed out, failed or sent a frame the harness never sends."""
    if fault.kind == "protocol":  # the candidate wrote it
        return JudgeStop(Status.HACKED, f"candidate process: {fault}", ["forged_message"])
    status = {"died": Status.CRASHED, "timeout": Status.TIMEOUT}.get(fault.kind, Status.RUNTIME_ERROR)
    return JudgeStop(status, f"candidate process: {fault}")


def _finish(
    result: EvalResult, options: EvalOptions, phases: dict[str, float], start: float, code: str | None = None
) -> None:
    """Record the phase times (with the total since ``start``), then the verdict's reward and feedback. ``code``:
    the candidate's extracted source, when the screen passed it."""
    phases["total"] = time.perf_counter() - start
    result.phase_seconds = {k: round(v, 4) for k, v in phases.items()}
    mark_interpreter_gap(result, code)
    mark_out_of_memory(result)
    result.error = redact_error(result.error)
    result.hacked = result.status == Status.HACKED
    result.correct = result.status == Status.CORRECT
    outcome = compute_reward(
        options.reward_scheme,
        status=result.status.value,
        speedup=rewarded_speedup(result, options) if result.timing_available else None,
        coverage=result.coverage,
        hacked=result.hacked,
        timing_available=result.mode == Mode.GPU,
        hacked_penalty=options.hacked_penalty,
        params=options.reward_params,
    )
    result.reward = outcome.reward
    result.reward_scheme = outcome.scheme
    result.feedback = render_feedback(result, options.feedback_max_chars)


def rewarded_speedup(result: EvalResult, options: EvalOptions) -> float | None:
    """The speedup the reward's speed term reads (``EvalOptions.speedup_estimate``): the ratio of medians, or the
    lower end of its 95 % interval (the median itself when there is no interval)."""
    if options.speedup_estimate == "lower" and result.speedup is not None and result.speedup_ci:
        return min(result.speedup_ci[0], result.speedup)
    return result.speedup


GAP_STATUSES = (Status.RUNTIME_ERROR, Status.COMPILE_ERROR, Status.CRASHED)


def mark_interpreter_gap(result: EvalResult, code: str | None) -> None:
    """In interpreter mode, label what the Triton interpreter cannot judge, from the judge's own reading of the
    candidate's source (``code``):

    * a failure is ``interpreter_unsupported`` only when its text names a gap AND the source uses a construct of
      that kind (the runner writes the text: alone it decides nothing); the error then names the construct and
      its line. Still scored, with the failure's reward: a candidate can reach such a construct on purpose.
    * a correct answer that calls a fast-math libdevice function is flagged ``interpreter_exact_fast_math``
      (``correctness["interpreter_exact_math"]`` names them): the interpreter computes those exactly, a GPU
      approximates, so only a GPU can confirm the answer.
    """
    from kernel_reward.common.interpreter_gaps import (
        FAST_MATH,
        GAP_DESCRIPTIONS,
        gap_in_error,
        gaps_in_source,
    )

    if result.mode != Mode.INTERPRETER or code is None:
        return
    if result.status == Status.CORRECT:
        exact = [str(gap) for gap in gaps_in_source(code) if gap.kind == FAST_MATH]
        if exact:
            result.flags.append("interpreter_exact_fast_math")
            result.correctness["interpreter_exact_math"] = exact
        return
    in_error = gap_in_error(result.error) if result.status in GAP_STATUSES else None
    if in_error is None:
        return  # most failures: the source is not read at all
    kind, line = in_error
    constructs = [str(gap) for gap in gaps_in_source(code) if gap.kind == kind]
    if not constructs:
        return
    result.status = Status.INTERPRETER_UNSUPPORTED
    result.error = (
        f"interpreter gap ({GAP_DESCRIPTIONS[kind]}: {', '.join(constructs)}; {line}); the candidate is not "
        f"judged on CPU: evaluate it on a GPU\n{result.error}"
    )


# The isolation record of a candidate the service rejected without running any of its code.
NOT_RUN_ISOLATION = {
    "level": "not_run",
    "process": "none: rejected by static checks before any candidate code ran",
}


def screen_request(request: EvalRequest, *, mode: Mode) -> tuple[EvalResult | None, str | None]:
    """The screen (no candidate code runs), for the execution service to apply in its own process before it
    spends a warm sandboxed worker. Returns ``(result, None)``, the finished result of a candidate the screen
    rejects, or ``(None, code)``: the extracted code, which the service sends on as ``EvalRequest.screened_code``
    so the worker does not screen the candidate again. ``mode``: where the service would run it."""
    start = time.perf_counter()
    phases: dict[str, float] = {}
    try:
        return None, _screen(request, phases)
    except JudgeStop as stop:
        result = EvalResult(mode=mode)
        apply_stop(result, stop)
    result.isolation = dict(NOT_RUN_ISOLATION)
    result.attempts = 0  # no execution attempt: nothing ran
    _finish(result, request.options, phases, start)
    return result, None


def _screen(request: EvalRequest, phases: dict[str, float]) -> str:
    """The candidate's extracted code, or JudgeStop with the screen's rejection (no candidate code runs)."""
    with _phase(phases, "screen"):
        screening = screen_candidate(request.candidate, request.entry_point)
    if not screening.passed:
        raise JudgeStop(screening.status, screening.error, screening.hack_reasons)
    return screening.code


def _screened_code(request: EvalRequest, phases: dict[str, float]) -> str:
    """The candidate's code: screened by the service already, or screened here (the one-shot path)."""
    return request.screened_code if request.screened_code is not None else _screen(request, phases)


def _run_pipeline(
    request: EvalRequest,
    code: str,
    device: str | None,
    work_dir: Path,
    timing_slot: TimingSlot,
    result: EvalResult,
    phases: dict[str, float],
    runner: Any,
    priors: PriorExchange | None = None,
    launch_ledger: bool = False,
) -> None:
    own_runner = runner is None
    if own_runner:  # the one-shot path: a fresh sandboxed runner of our own
        with _phase(phases, "runner_start"):
            runner = start_runner_process(result.mode, launch_ledger)
    try:
        with _phase(phases, "prepare"):
            info = prepare_worker(device, triton_check=False)  # the judge runs only its own seal kernel
        result.device = info.device_name
        import torch

        from kernel_reward.judge import verdict
        from kernel_reward.judge.phase_memory import PhasePeaks

        torch_device = torch.device(info.device)
        apply_tf32_policy(request.options.allow_tf32)  # the runner gets the same policy with the candidate
        work_dir.mkdir(parents=True, exist_ok=True)
        # The candidate's code runs in the runner: its record is the result's (the service adds the judge's own).
        result.isolation = {
            **dict(runner.isolation),
            "judge": {"process": "the calling process (not sandboxed)"},
        }

        peaks = PhasePeaks(torch_device)

        @contextlib.contextmanager
        def phase(name: str) -> Iterator[None]:
            with _phase(phases, name), peaks.phase(name):
                yield

        # Our own runner has no service watching its wall clock: the judge enforces timeout_s on it.
        deadline = time.monotonic() + request.options.timeout_s if own_runner else None
        try:
            verdict.judge(
                request,
                code,
                work_dir,
                timing_slot,
                runner,
                result,
                phase,
                torch_device,
                deadline,
                spans=SpanClock(phases),
                priors=priors,
            )
        except RunnerFault as fault:
            raise stop_from_fault(fault) from fault
        finally:
            if peaks.enabled:
                result.memory["judge_peak_bytes"] = dict(peaks.peaks)
    finally:
        if own_runner:
            runner.close()


JUDGE_OUT_OF_MEMORY = "out of GPU memory under this worker's cap"
RUNNER_OUT_OF_MEMORY_MARKS = ("OutOfMemoryError", "CUDA out of memory")


def mark_out_of_memory(result: EvalResult) -> None:
    """Flag ``out_of_memory`` (it buys one retry alone, ``service.pool.needs_device_alone``) on the judge's own
    out-of-memory, or on the runner's text saying so once the judge has sized the call (``call_bytes``): the
    runner's text is the candidate's to write, and only a call large against the worker's share is retried."""
    if result.status != Status.RUNTIME_ERROR:
        return
    error = result.error or ""
    own = error.startswith(JUDGE_OUT_OF_MEMORY)
    claimed = any(mark in error for mark in RUNNER_OUT_OF_MEMORY_MARKS) and "call_bytes" in result.memory
    if own or claimed:
        result.flags.append("out_of_memory")


def start_runner_process(mode: Mode, launch_ledger: bool = False) -> Any:
    """A fresh sandboxed runner in a new process (exec'd: this process may hold a CUDA context already); with the
    launch ledger on a GPU when ``launch_ledger``."""
    from kernel_reward.ipc import runner_channel

    device, ledger = ("cpu", False) if mode is Mode.INTERPRETER else ("cuda", launch_ledger)
    process = runner_channel.spawn_runner_exec(device, SandboxPolicy(), launch_ledger=ledger)
    runner_channel.wait_ready(process)
    return process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kernel_reward.judge.pipeline",
        description="Evaluate one candidate in this process (one-shot mode) and write the EvalResult as JSON.",
    )
    parser.add_argument("--request", required=True, type=Path, help="EvalRequest JSON file")
    parser.add_argument("--out", required=True, type=Path, help="where to write the EvalResult JSON")
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="directory for the program files (default: a temp dir)"
    )
    ledger_help = "GPU: start the launch ledger in the runner (CUPTI's kernel records; docs/security.md)"
    parser.add_argument("--launch-ledger", action="store_true", help=ledger_help)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        request = EvalRequest.from_json_file(args.request)
    except (OSError, ValueError) as exc:
        parser.error(f"cannot read request {args.request}: {exc}")
    if mode_of(request.device) is Mode.INTERPRETER:
        ensure_interpreter_env()
    with tempfile.TemporaryDirectory(prefix="kr_eval_") as tmp:
        work_dir = args.work_dir or Path(tmp)
        result = evaluate_request(request, work_dir=work_dir, launch_ledger=args.launch_ledger)
    args.out.write_text(result.to_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
