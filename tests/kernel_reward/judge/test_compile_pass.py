"""The judge's compile pass (``EvalOptions.compile_pass``): one forward before the checks whose own kernels are
compiled and not launched. It decides nothing: a forward that raises there (here, one that refuses outputs its
kernel did not write) is only flagged, and the checks that follow judge the candidate as without it."""

from __future__ import annotations

from hack_corpus import ENTRIES_DIR, TASKS_DIR

ADD_RELU = (TASKS_DIR / "add_relu.py").read_text()
HONEST = (ENTRIES_DIR / "honest_add_relu.py").read_text()
# Honest, and loud when its kernel has not written its output (as in the compile pass, where it never runs).
CHECKS_ITS_OUTPUT = HONEST.replace(
    "    out = torch.empty_like(x)\n",
    "    out = torch.full_like(x, float('nan'))\n",
).replace(
    "    return out\n",
    "    if torch.isnan(out).any():\n        raise RuntimeError('the kernel left its output unwritten')\n    return out\n",
)


def fenced(code: str) -> str:
    return "```python\n" + code + "```"


def test_the_compile_pass_runs_before_the_checks_and_decides_nothing(evaluate_subprocess):
    assert CHECKS_ITS_OUTPUT != HONEST
    plain = evaluate_subprocess(ADD_RELU, fenced(HONEST), compile_pass=True)
    assert plain.status.value == "correct", plain.error
    assert "compile_pass" in plain.phase_seconds and "compile_pass_raised" not in plain.flags
    loud = evaluate_subprocess(ADD_RELU, fenced(CHECKS_ITS_OUTPUT), compile_pass=True)
    assert loud.status.value == "correct", loud.error
    assert "compile_pass_raised" in loud.flags
    without = evaluate_subprocess(ADD_RELU, fenced(CHECKS_ITS_OUTPUT))
    assert without.status.value == "correct" and "compile_pass" not in without.phase_seconds
    assert "compile_pass_raised" not in without.flags
