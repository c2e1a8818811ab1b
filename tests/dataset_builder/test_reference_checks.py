"""Reference checks: one real child process per program; one small bad reference for every problem kind."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest

from dataset_builder.reference_checks import (
    OUTPUT_TAIL_BYTES,
    OutputStats,
    ProblemKind,
    ReferenceCheck,
    check_reference,
    check_references,
    classify_outputs,
    tolerance_for,
)
from dataset_builder.tasks import load_tasks

# A complete program with a placeholder for the body of forward (indented 8 spaces) and extra module code.
TEMPLATE = '''"""Synthetic reference for the checker tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
DIM = 32
{module}

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x):
{body}


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM]
'''


def program(body: str, module: str = "") -> str:
    return TEMPLATE.format(body="\n".join("        " + line for line in body.splitlines()), module=module)


GOOD = program("return torch.tanh(x) * self.weight + x.sum(dim=-1, keepdim=True)")

# One program per problem kind (and a few ways to crash), checked together in one parallel batch.
BAD = {
    "crash_forward": (program("raise RuntimeError('boom in forward')"), ProblemKind.CRASH),
    "crash_missing_get_inputs": (GOOD.replace("def get_inputs", "def make_inputs"), ProblemKind.CRASH),
    "crash_syntax": (GOOD.replace("def forward(self, x):", "def forward(self, x)"), ProblemKind.CRASH),
    "crash_killed": (program("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"), ProblemKind.CRASH),
    "crash_stdin_is_empty": (program("input()\nreturn x"), ProblemKind.CRASH),
    "crash_noisy": (
        program("for i in range(20000):\n    print('line', i)\nraise ValueError('late')"),
        ProblemKind.CRASH,
    ),
    "nondeterministic": (program("return F.dropout(x, p=0.5, training=True)"), ProblemKind.NONDETERMINISTIC),
    "stateful": (program("self.weight.data += 1.0\nreturn x * self.weight"), ProblemKind.NONDETERMINISTIC),
    "input_independent": (program("return torch.zeros_like(x) + self.weight"), ProblemKind.INPUT_INDEPENDENT),
    "fixed_inputs": (
        GOOD.replace("return [torch.randn(BATCH, DIM)]", "return [torch.ones(BATCH, DIM)]"),
        ProblemKind.INPUT_INDEPENDENT,
    ),
    "near_zero": (program("return x * 1e-6"), ProblemKind.NEAR_CONSTANT),
    "near_constant": (program("return 1000.0 + 1e-3 * x"), ProblemKind.NEAR_CONSTANT),
    "no_tensor_output": (program("return float(x.sum())"), ProblemKind.NO_TENSOR_OUTPUT),
    "non_finite": (program("return torch.log(x)"), ProblemKind.NON_FINITE),
}

# A child needs ~2 s to start and import torch on an idle 2-core box; leave room for a loaded one.
TIMEOUT_S = 20.0
HANG_TIMEOUT_S = 4.0


def spawner_program(pid_file: Path) -> str:
    """Starts a long-lived grandchild at import, then behaves: the check must still kill it afterwards."""
    module = (
        "import subprocess\n"
        f"_p = subprocess.Popen(['sleep', '300'])\nopen({str(pid_file)!r}, 'w').write(str(_p.pid))\n"
    )
    return program("return torch.tanh(x) * self.weight", module=module)


@pytest.fixture(scope="module")
def batch_results(tmp_path_factory) -> dict[str, ReferenceCheck]:
    """Every program of BAD plus three others, checked side by side in one warm call (children are the cost)."""
    pid_file = tmp_path_factory.mktemp("grandchild") / "pid"
    sources = {name: src for name, (src, _) in BAD.items()}
    sources.update(
        good=GOOD, named_net=GOOD.replace("class Model", "class Net"), spawner=spawner_program(pid_file)
    )
    results = check_references(list(sources.values()), num_workers=2, timeout_s=TIMEOUT_S, progress=False)
    out = dict(zip(sources, results, strict=True))
    out["spawner"].details += f"\n[grandchild pid {pid_file.read_text()}]"  # for the test below
    return out


@pytest.mark.parametrize("name", list(BAD))
def test_each_bad_reference_is_flagged_with_its_kind(batch_results, name):
    result = batch_results[name]
    expected = BAD[name][1]
    assert not result.ok
    assert expected in result.problems, result.details
    assert expected.value in result.details
    assert result.seconds > 0


def test_crash_details_say_what_failed(batch_results):
    assert "boom in forward" in batch_results["crash_forward"].details
    assert "forward raised RuntimeError" in batch_results["crash_forward"].details
    assert "get_inputs" in batch_results["crash_missing_get_inputs"].details
    assert "SyntaxError" in batch_results["crash_syntax"].details
    assert "signal 9" in batch_results["crash_killed"].details
    assert "EOFError" in batch_results["crash_stdin_is_empty"].details


def test_child_output_is_truncated_to_its_tail(batch_results):
    details = batch_results["crash_noisy"].details
    assert "line 19999" in details and "line 0\n" not in details
    assert "earlier bytes dropped" in details
    assert len(details) < OUTPUT_TAIL_BYTES * 3  # traceback + tail, not 20k lines


def test_input_independence_reason_mentions_fixed_inputs(batch_results):
    assert "same inputs under both seeds" in batch_results["fixed_inputs"].details
    # The honest dependence on the weight alone does not make it near-constant.
    assert ProblemKind.NEAR_CONSTANT not in batch_results["input_independent"].problems


def test_good_references_pass_and_keep_input_order(batch_results):
    good = batch_results["good"]
    assert good.ok and good.problems == [] and good.details == "ok"
    assert good.outputs[0].shape == (8, 32) and good.outputs[0].dtype == "float32"
    assert batch_results["named_net"].problems == [ProblemKind.CRASH]  # no class named Model
    assert "['Model']" in batch_results["named_net"].details


def test_grandchildren_do_not_outlive_the_check(batch_results):
    spawner = batch_results["spawner"]
    assert spawner.ok, spawner.details
    _assert_process_gone(int(spawner.details.rsplit("pid ", 1)[1].rstrip("]")))


def test_fresh_interpreter_path_selects_the_entry_point_and_kills_grandchildren(tmp_path):
    pid_file = tmp_path / "pid"
    source = spawner_program(pid_file).replace("class Model", "class Net")
    result = check_reference(source, entry_point="Net", timeout_s=TIMEOUT_S)
    assert result.ok, result.details
    _assert_process_gone(int(pid_file.read_text()))


def test_hanging_reference_times_out():
    source = program("import time\nwhile True:\n    time.sleep(1)")
    started = time.perf_counter()
    result = check_reference(source, timeout_s=HANG_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    assert result.problems == [ProblemKind.TIMEOUT], result.details
    assert f"no result after {HANG_TIMEOUT_S:g} s" in result.details
    assert HANG_TIMEOUT_S <= elapsed < HANG_TIMEOUT_S + 10


def test_warm_server_survives_a_timeout_and_keeps_serving():
    hang = program("import time\nwhile True:\n    time.sleep(1)")
    results = check_references([hang, GOOD], num_workers=1, timeout_s=HANG_TIMEOUT_S, progress=False)
    assert [r.problems for r in results] == [[ProblemKind.TIMEOUT], []]
    assert "during forward" in results[0].details  # warm children start with torch imported
    assert results[1].ok and results[1].seconds < HANG_TIMEOUT_S


def _assert_process_gone(pid: int) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        # A killed process may linger as a zombie until init reaps it.
        if Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            return
        time.sleep(0.1)
    pytest.fail(f"grandchild {pid} survived the check")


def test_argument_errors():
    with pytest.raises(ValueError, match="timeout_s"):
        check_reference(GOOD, timeout_s=0)
    with pytest.raises(ValueError, match="entry_point"):
        check_reference(GOOD, entry_point="not a name")
    with pytest.raises(ValueError, match="num_workers"):
        check_references([GOOD], num_workers=0)


# --------------------------------------------------------------------------------------------------------
# The shipped task set at the small preset


def test_every_shipped_task_passes_at_the_small_preset():
    """Warm checks make the whole set cheap (~0.2 s a task), so it runs by default."""
    tasks = load_tasks("small")
    results = check_references([t.source for t in tasks], num_workers=2, timeout_s=60.0, progress=False)
    failed = {t.name: r.details for t, r in zip(tasks, results, strict=True) if not r.ok}
    assert not failed
    by_name = {t.name: r for t, r in zip(tasks, results, strict=True)}
    assert by_name["reduction_argmax"].outputs[0].dtype == "int64"
    assert by_name["activation_gelu_fp16"].outputs[0].dtype == "float16"
    assert len(by_name["fused_add_rms_norm"].outputs) == 2  # tuple outputs are all checked


# --------------------------------------------------------------------------------------------------------
# The pure classification


def stats(**changes) -> OutputStats:
    base = dict(
        index=0, shape=(4, 8), dtype="float32", numel=32, finite=True, max_abs=3.0, rms=1.0, std=1.0,
        repeat_max_abs_diff=0.0, other_input_max_abs_diff=2.5,
    )  # fmt: skip
    return OutputStats(**{**base, **changes})


def kinds(outputs, **kwargs) -> list[ProblemKind]:
    return [k for k, _ in classify_outputs(outputs, **kwargs)]


def test_classify_outputs_thresholds():
    assert kinds([stats()]) == []
    assert kinds([]) == [ProblemKind.NO_TENSOR_OUTPUT]
    assert kinds([stats(finite=False, repeat_max_abs_diff=math.nan)]) == [ProblemKind.NON_FINITE]
    # Reassociation-sized differences are fine; larger ones are nondeterminism.
    assert kinds([stats(repeat_max_abs_diff=1e-7)]) == []
    assert kinds([stats(repeat_max_abs_diff=1e-4)]) == [ProblemKind.NONDETERMINISTIC]
    assert kinds([stats(repeat_max_abs_diff=math.inf)]) == [ProblemKind.NONDETERMINISTIC]
    # Input dependence is judged against the evaluator tolerance plus a relative margin.
    assert kinds([stats(other_input_max_abs_diff=0.0)]) == [ProblemKind.INPUT_INDEPENDENT]
    assert kinds([stats(other_input_max_abs_diff=2e-3)]) == [ProblemKind.INPUT_INDEPENDENT]
    assert kinds([stats(other_input_max_abs_diff=5e-3)]) == []
    assert kinds([stats(other_input_max_abs_diff=math.inf)]) == []  # shape changed with the input
    # Near zero at the dtype's tolerance; near constant when std is tiny against RMS (never for one element).
    assert kinds([stats(max_abs=5e-5, rms=3e-5, std=3e-5, other_input_max_abs_diff=1.0)]) == [
        ProblemKind.NEAR_CONSTANT
    ]
    assert kinds(
        [stats(dtype="float16", max_abs=5e-3, rms=3e-3, std=3e-3, other_input_max_abs_diff=1.0)]
    ) == [ProblemKind.NEAR_CONSTANT]
    assert (
        kinds([stats(dtype="float16", max_abs=5e-2, rms=3e-2, std=3e-2, other_input_max_abs_diff=1.0)]) == []
    )
    assert kinds([stats(rms=5.0, std=4e-3, max_abs=6.0, other_input_max_abs_diff=1.0)]) == [
        ProblemKind.NEAR_CONSTANT
    ]
    assert (
        kinds([stats(rms=5.0, std=4e-3, max_abs=6.0, numel=1, shape=(), other_input_max_abs_diff=1.0)]) == []
    )
    # Any flagged output of a tuple flags the program; one reason per kind.
    found = classify_outputs(
        [stats(), stats(index=1, other_input_max_abs_diff=0.0), stats(index=2, other_input_max_abs_diff=0.0)]
    )
    assert [k for k, _ in found] == [ProblemKind.INPUT_INDEPENDENT] and "output 1" in found[0][1]


def test_tolerance_for_dtypes():
    assert tolerance_for("float32") == tolerance_for("torch.float32") == 1e-4
    assert tolerance_for("float16") == tolerance_for("bfloat16") == 1e-2
    assert tolerance_for("int64") == tolerance_for("bool") == 0.0


def test_result_to_dict_is_json_ready():
    import json

    result = ReferenceCheck(
        ok=False, problems=[ProblemKind.TIMEOUT], details="x", seconds=1.5, outputs=[stats()]
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert data["problems"] == ["timeout"] and data["outputs"][0]["shape"] == [4, 8]


# --------------------------------------------------------------------------------------------------------
# Command line


def test_cli_help_and_exit_codes(tmp_path):
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    cli = [sys.executable, "-m", "dataset_builder.reference_checks"]
    shown = subprocess.run([*cli, "--help"], cwd=root, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--tasks" in shown.stdout
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(BAD["near_zero"][0])
    run = subprocess.run(
        [*cli, str(good), str(bad), "--timeout", str(TIMEOUT_S)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    lines = dict(line.split("\t")[:2] for line in run.stdout.splitlines())
    assert lines[str(good)] == "ok"
    assert "near_constant" in lines[str(bad)].split(",")  # (x * 1e-6 is input-independent at 1e-4 too)
    nothing = subprocess.run(cli, cwd=root, capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 2 and "nothing to check" in nothing.stderr
