"""Feedback: background §1 structure, important parts first, cut to the configured length."""

import json

from kernel_reward.judge.feedback import render_feedback
from kernel_reward.result import EvalResult, KernelTiming, Status


def timed_result(**kwargs) -> EvalResult:
    base = dict(
        status=Status.CORRECT,
        compiled=True,
        correct=True,
        mode="gpu",
        timing_available=True,
        speedup=1.53,
        reference_time_ms=0.3,
        kernel_time_ms=0.196,
        coverage=0.8,
        reward=1.43,
        launched_kernels=["fused_kernel"],
        kernel_table=[
            KernelTiming("fused_kernel", 1.6, 10, True),
            KernelTiming("cublas_gemm", 0.4, 10, False),
        ],
    )
    base.update(kwargs)
    return EvalResult(**base)


def test_timed_feedback_has_runtimes_speedup_and_kernels():
    data = json.loads(render_feedback(timed_result()))
    assert list(data)[:4] == ["status", "compiled", "correctness", "hacked"]
    assert data["speedup"] == 1.53
    assert data["kernel_runtime_ms"] == 0.196
    assert data["top_kernels"][0] == {"name": "fused_kernel", "device_ms": 1.6, "calls": 10, "yours": True}
    assert data["reward"] == 1.43


def test_interpreter_feedback_says_timing_is_missing():
    result = EvalResult(status=Status.CORRECT, compiled=True, correct=True, mode="interpreter", reward=1.0)
    data = json.loads(render_feedback(result))
    assert "interpreter" in data["timing"]
    assert "speedup" not in data


def test_long_error_is_cut_but_verdict_and_exception_survive():
    error = "Traceback (most recent call last):\n" + "  frame line\n" * 2000 + "ValueError: the real cause"
    result = EvalResult(status=Status.RUNTIME_ERROR, compiled=True, error=error, mode="gpu")
    text = render_feedback(result, max_chars=1000)
    assert len(text) <= 1000
    data = json.loads(text)
    assert data["status"] == "runtime_error"
    assert data["error"].endswith("ValueError: the real cause")
    assert "[...cut...]" in data["error"]


def test_hack_reasons_are_shown():
    result = EvalResult(status=Status.HACKED, hacked=True, hack_reasons=["decoy_kernel"], mode="interpreter")
    assert json.loads(render_feedback(result))["hack_reasons"] == ["decoy_kernel"]
