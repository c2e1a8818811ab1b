"""The worker seam end to end on CPU: one-shot CLI, result fields, state transfer, phases, timing slot use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from hack_corpus import ENTRIES_DIR, TASKS_DIR
from kernel_reward.judge.correctness import LAUNCH_PASSES, trial_seeds
from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult
from tests.kernel_reward.conftest import REPO_ROOT

ADD_RELU = (TASKS_DIR / "add_relu.py").read_text()
LINEAR = (TASKS_DIR / "linear.py").read_text()


def fenced(path_name: str) -> str:
    return "```python\n" + (ENTRIES_DIR / path_name).read_text() + "```"


def test_cli_help():
    proc = subprocess.run(
        [sys.executable, "-m", "kernel_reward.judge.pipeline", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "--request" in proc.stdout


def test_cli_rejects_a_bad_request_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"reference_code": "x", "candidate": "y", "options": {"num_trails": 1}}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernel_reward.judge.pipeline",
            "--request",
            str(bad),
            "--out",
            str(tmp_path / "out.json"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "num_trails" in proc.stderr
    assert not (tmp_path / "out.json").exists()


def test_format_error_without_code(evaluate_subprocess):
    result = evaluate_subprocess(ADD_RELU, "I would write a kernel, but not today.")
    assert result.status.value == "format_error" and not result.compiled and result.reward == 0.0
    assert "code block" in result.error and '"status": "format_error"' in result.feedback


def test_honest_linear_result_fields(evaluate_subprocess):
    result = evaluate_subprocess(LINEAR, fenced("honest_linear.py"))
    assert result.status.value == "correct", result.error
    # The candidate draws a buffer before its Linear, so only the state transfer makes its weights match.
    assert set(result.state_transfer["copied"]) == {"linear.weight", "linear.bias"}
    assert result.state_transfer["candidate_only"] == ["scratch"]
    assert len(result.correctness["trials"]) == 5
    assert all(t["ok_before_reference"] and t["ok_after_reference"] for t in result.correctness["trials"])
    assert result.correctness["decoy_check"] == "passed"
    assert result.correctness["launch_passes"] == {name: "launched" for name, _, _ in LAUNCH_PASSES}
    assert result.launched_kernels == ["linear_kernel"]
    assert result.shape_generalization["ran"] and result.shape_generalization["passed"]
    assert result.shape_generalization["constants"]["K"] == [32, 47]
    assert (result.mode, result.timing_available, result.reward_scheme) == (
        "interpreter",
        False,
        "correctness",
    )
    assert result.speedup is None and result.kernel_time_ms is None and result.coverage is None
    assert "timing_unavailable_interpreter" in result.flags
    assert {"screen", "load", "build", "correctness", "shape_check", "total"} <= set(result.phase_seconds)


def test_shape_check_off_skips_the_resized_run(evaluate_subprocess):
    result = evaluate_subprocess(ADD_RELU, fenced("shape_specialised.py"), shape_check="off")
    assert result.status.value == "correct"
    assert result.shape_generalization == {"ran": False, "passed": None, "reason": "shape_check is off"}


def test_broken_reference_is_flagged_as_a_task_problem(evaluate_subprocess):
    reference = ADD_RELU.replace("def get_inputs", "def get_inputz")
    result = evaluate_subprocess(reference, fenced("honest_add_relu.py"))
    assert result.status.value == "runtime_error" and "reference_error" in result.flags
    assert result.scored is False  # a task problem met before any candidate code: trained neither way
    assert "get_inputs" in result.error


def test_hidden_seeds_differ_per_base_and_avoid_42():
    first, second = trial_seeds(1, 5), trial_seeds(2, 5)
    assert len(set(first)) == 5 and set(first).isdisjoint(second) and 42 not in first


def test_in_process_seam_uses_timing_slot_only_for_timing(tmp_path):
    """evaluate_request in a fresh interpreter (TRITON_INTERPRET must precede the triton import): the slot is
    never entered on CPU, where nothing is timed; prepare_worker is idempotent and reports interpreter mode. The
    lock's shared side is taken per device step (each correctness trial on its own), so a judge waiting to time
    waits for one step, not for a whole check; the candidate's import (host work) is asked outside it."""
    script = textwrap.dedent(f"""
        import contextlib, json, pathlib
        from kernel_reward.request import EvalRequest
        from kernel_reward.judge.pipeline import evaluate_request
        from kernel_reward.ipc.runner_channel import RunnerClient
        from kernel_reward.runtime import prepare_worker
        entered, shared, holding, asked = [], [], [0], []
        ask = RunnerClient.ask
        def recording_ask(self, message, *args, **kwargs):
            asked.append((message["type"], holding[0] > 0))
            return ask(self, message, *args, **kwargs)
        RunnerClient.ask = recording_ask
        @contextlib.contextmanager
        def slot():
            entered.append(1)
            yield
        @contextlib.contextmanager
        def shared_side(step):
            shared.append(step)
            holding[0] += 1
            try:
                yield
            finally:
                holding[0] -= 1
        slot.shared = shared_side
        info = prepare_worker("cpu")
        assert prepare_worker("cpu") is info
        request = EvalRequest({ADD_RELU!r}, {fenced("honest_add_relu.py")!r}, device="cpu")
        results = [evaluate_request(request, work_dir=pathlib.Path({str(tmp_path)!r}) / str(i), timing_slot=slot)
                   for i in range(2)]
        print(json.dumps({{"mode": info.mode, "entered": len(entered), "shared": len(shared), "steps": sorted(set(shared)),
                          "asked": sorted(set(map(tuple, asked))),
                          "trials": [r.correctness["num_trials"] for r in results],
                          "statuses": [r.status.value for r in results],
                          "prepare": [r.phase_seconds.get("prepare") for r in results]}}))
    """)
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    assert data["mode"] == "interpreter" and data["entered"] == 0
    # per evaluation: the reference's build, the ledger's clock reading before the load, the build, buffer reuse,
    # each trial, the two checked K-call messages (the decoy check's, the batched trial's), the launch passes, the
    # resized check
    assert data["shared"] == sum(trials + 8 for trials in data["trials"]), data
    assert data["steps"] == [
        "buffer_reuse",
        "candidate_build",
        "checked_batches",
        "launch_passes",
        "load_clock",
        "reference_build",
        "shape_check",
        "trial",
    ]
    # the runner's load message never under the shared side; its build and its calls always under it
    assert ["load", False] in data["asked"] and ["load", True] not in data["asked"], data["asked"]
    assert ["build", True] in data["asked"] and ["build", False] not in data["asked"], data["asked"]
    assert ["run", False] not in data["asked"], data["asked"]
    assert data["statuses"] == ["correct", "correct"]
    assert all(seconds < 0.05 for seconds in data["prepare"])  # paid once, before the candidates


HONEST_ELU = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def elu_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.where(x > 0, x, alpha * (tl.exp(x) - 1.0)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        elu_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), self.alpha, BLOCK=256)
        return out
"""


def test_shipped_task_small_preset_with_an_honest_candidate(evaluate_subprocess):
    from dataset_builder.tasks import load_tasks

    (task,) = load_tasks("small", ["activation_elu"])
    result = evaluate_subprocess(task.source, "```python\n" + HONEST_ELU + "```")
    assert result.status.value == "correct", result.error
    assert result.shape_generalization["passed"] is True
    assert result.shape_generalization["via"] == "kernel_reward.screen.sizes"
    broken = evaluate_subprocess(task.source, "```python\n" + HONEST_ELU.replace("- 1.0", "- 0.9") + "```")
    assert broken.status.value == "incorrect" and "outside atol" in broken.error


def test_known_answer_check_names_a_broken_interpreter():
    """Simulate the old-Triton + numpy-2 interpreter that silently writes nothing: the check must say so."""
    script = textwrap.dedent("""
        import torch
        import triton.runtime.interpreter as interpreter
        from kernel_reward.runner import selftest
        selftest.known_answer_check(torch.device("cpu"))  # the real interpreter passes
        interpreter.GridExecutor.__call__ = lambda self, *args, **kwargs: None  # writes nothing
        try:
            selftest.known_answer_check(torch.device("cpu"))
        except RuntimeError as exc:
            print("REFUSED:", exc)
    """)
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO_ROOT,
        env=dict(os.environ, TRITON_INTERPRET="1"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "REFUSED: Triton known-answer check failed" in proc.stdout and "numpy" in proc.stdout


def test_out_of_memory_outside_the_candidate_is_runtime_error_naming_the_cap(monkeypatch, tmp_path):
    """A GPU OOM in the harness's own steps (reference at 1.5x size, poisoning) under the pool's memory cap is not
    an evaluator crash: the result says the task does not fit this worker's cap."""
    import torch

    from kernel_reward.judge import pipeline
    from kernel_reward.request import EvalRequest

    def exhausted(*_args, **_kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 5.61 GiB.")

    monkeypatch.setattr(pipeline, "_run_pipeline", exhausted)
    result = pipeline.evaluate_request(EvalRequest(ADD_RELU, fenced("honest_add_relu.py")), work_dir=tmp_path)
    assert result.status.value == "runtime_error" and not result.correct and result.reward == 0.0
    assert "out of GPU memory under this worker's cap" in result.error and "5.61 GiB" in result.error


def test_events_coverage_falls_back_to_the_profiler(monkeypatch):
    """When the events method cannot measure a forward gap-free, the runner asks the profiler and says so; when
    the profiler fails too, its reply is an error, which the judge only flags (the verdict stands)."""
    from kernel_reward.judge.coverage import coverage_from_reply
    from kernel_reward.result import EvalResult, KernelTiming
    from kernel_reward.runner import profiling
    from kernel_reward.runner.runner import measure_coverage

    def gappy(*_args):
        raise profiling.LaunchGapError(
            "events coverage: a forward's launch (60.00 ms) outlasted its lead spin"
        )

    table = [KernelTiming("add_kernel", 0.3, 10, True), KernelTiming("relu", 0.2, 10, False)]
    monkeypatch.setattr(profiling, "event_coverage", gappy)
    monkeypatch.setattr(
        profiling,
        "profile_candidate",
        lambda *_args: profiling.ProfileResult(0.6, table, 0.5, ["add_kernel"]),
    )
    result = EvalResult()
    coverage_from_reply(
        measure_coverage(None, "cand", [], "cuda:0", 10, "events"), result, frozenset({"add_kernel"})
    )
    assert result.coverage == 0.6 and result.kernel_table == table
    assert [flag.split(":")[0] for flag in result.flags] == [
        "coverage_self_reported",
        "coverage_from_profiler",
    ]

    def broken(*_args):
        raise RuntimeError("CUPTI unavailable")

    monkeypatch.setattr(profiling, "profile_candidate", broken)
    result = EvalResult()
    coverage_from_reply(
        measure_coverage(None, "cand", [], "cuda:0", 10, "events"), result, frozenset({"add_kernel"})
    )
    assert result.coverage is None and result.kernel_table == []
    assert result.flags[0].startswith("profile_failed") and "CUPTI unavailable" in result.flags[0]
    assert "coverage_from_profiler" in result.flags[0]


def test_a_coverage_without_valid_rows_is_not_taken():
    """Coverage is computed from the runner's rows: a number with no valid rows behind it is not taken."""
    from kernel_reward.judge.coverage import coverage_from_reply
    from kernel_reward.result import EvalResult

    result = EvalResult()
    coverage_from_reply(
        {"type": "coverage", "coverage": 7.5, "table": [{"name": "x"}, "junk"], "flag": None},
        result,
        frozenset({"x"}),
    )
    assert result.coverage is None and result.kernel_table == [] and "coverage_self_reported" in result.flags
    result = EvalResult()
    coverage_from_reply({"type": "coverage", "coverage": float("nan"), "table": None}, result, frozenset())
    assert result.coverage is None


def test_strict_mode_floor_on_coverage():
    """min_coverage: a correct candidate whose own kernels are a small share of the device time is hacked
    (low_coverage); no floor, or no coverage measured (CPU), leaves the verdict alone."""
    import pytest

    from kernel_reward.judge.coverage import below_coverage_floor
    from kernel_reward.options import EvalOptions

    assert "0.120" in below_coverage_floor(0.12, 0.3)
    assert below_coverage_floor(0.31, 0.3) is None
    assert below_coverage_floor(0.12, None) is None and below_coverage_floor(None, 0.3) is None
    with pytest.raises(ValueError, match="min_coverage"):
        EvalOptions(min_coverage=1.5)


def test_one_shot_path_enforces_the_wall_clock_on_its_own_runner(tmp_path):
    """Without an execution service around it, the judge holds its runner to timeout_s: a forward that never
    returns is a timeout (and the runner is killed), not a hung evaluation."""
    hang = fenced("honest_add_relu.py").replace(
        "    def forward(self, x, y):\n",
        "    def forward(self, x, y):\n        while True:\n            pass\n",
        1,
    )
    assert "while True" in hang
    request = EvalRequest(ADD_RELU, hang, device="cpu", options=EvalOptions(timeout_s=6.0, seed_base=1))
    (tmp_path / "request.json").write_text(request.to_json())
    env = dict(os.environ, TRITON_INTERPRET="1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernel_reward.judge.pipeline",
            "--request",
            str(tmp_path / "request.json"),
            "--out",
            str(tmp_path / "result.json"),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = EvalResult.from_dict(json.loads((tmp_path / "result.json").read_text()))
    assert result.status.value == "timeout" and "wall-clock" in result.error


def test_feedback_shows_the_candidates_error_not_the_harness(evaluate_subprocess):
    """The runner's traceback crosses the harness's own frames and the service's paths: a map for patching the
    harness. The feedback keeps the candidate's frame (its file as candidate.py), library frames without their
    install paths, and the error; it drops every kernel_reward frame and absolute path."""
    result = evaluate_subprocess(ADD_RELU, fenced("fault_raising_forward.py"))
    assert result.status.value == "runtime_error"
    for text in (result.feedback, result.error):
        assert "kernel_reward" not in text and str(REPO_ROOT) not in text and "/tmp/" not in text, text
        assert "site-packages" not in text, text
    assert 'File "candidate.py", line 29, in forward' in result.error
    assert 'raise RuntimeError("boom")' in result.error and "RuntimeError: boom" in result.error


def test_the_resized_check_runs_when_only_a_smaller_size_fits_the_arena(evaluate_subprocess):
    """A task whose call fills the exchange arena (slot-sized on a large task, as every full-size GPU task is)
    has no room for 1.5x inputs: the check then runs at a smaller size instead of not at all, so a kernel for
    the shipped size with a torch fallback elsewhere is still caught under shape_check="fail"."""
    n = 1_500_001  # one call of 18 MB: the CPU arena (32 MiB budget) holds exactly one
    reference = ADD_RELU.replace("N = 64", f"N = {n}")
    candidate = f"""import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x + y, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        if x.numel() != {n}:  # the shipped size only; torch elsewhere
            return torch.relu(x + y)
        out = torch.empty_like(x)
        add_relu_kernel[(triton.cdiv({n}, 65536),)](x, y, out, {n}, BLOCK=65536)  # few programs: the interpreter runs each one
        return out
"""
    result = evaluate_subprocess(reference, "```python\n" + candidate + "```", shape_check="fail")
    shape = result.shape_generalization
    assert shape["ran"] and shape["scale"] < 1, shape
    assert result.status.value == "incorrect" and "no Triton kernel" in shape["reason"], (
        result.status,
        shape,
    )


def test_a_task_too_large_for_the_interpreter_is_refused_unscored(evaluate_subprocess):
    """On the CPU a shipped-size task would time out whatever the candidate does: refused up front, in one line
    naming the small preset, and unscored (the task decided it, not the candidate)."""
    reference = ADD_RELU.replace("N = 64", "N = 8_000_000")  # 61 MiB of inputs a call
    result = evaluate_subprocess(reference, fenced("honest_add_relu.py"))
    assert result.status.value == "interpreter_unsupported" and not result.scored
    assert "task_too_large_for_interpreter" in result.flags and "--preset small" in result.error
    assert "python -m dataset_builder task NAME" in result.error  # how to write one task at its small sizes
    assert (
        "load" in result.phase_seconds and "build" not in result.phase_seconds
    )  # nothing was drawn or built
