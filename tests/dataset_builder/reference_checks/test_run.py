"""reference_checks.run through kernel_reward's pool (kernel_reward.judge.reference_run) and outcome: one real sandboxed
child per program; one small bad reference for every problem kind; the shipped task set."""

from __future__ import annotations

import time

import pytest

from dataset_builder.checks import DropReason
from dataset_builder.reference_checks.run import check_reference, check_references
from dataset_builder.reference_checks.verdicts import ReferenceCheck
from dataset_builder.tasks import load_tasks
from tests.support.reference_programs import BAD, GOOD, HANG_TIMEOUT_S, TIMEOUT_S, program


def spawner_program() -> str:
    """Starts a long-lived grandchild at import, then behaves: the check still ends (the pool kills the child's
    whole process group and pid namespace; tests/kernel_reward's sandbox tests check that directly)."""
    module = "import subprocess\n_p = subprocess.Popen(['sleep', '300'])\n"
    return program("return torch.tanh(x) * self.weight", module=module)


@pytest.fixture(scope="module")
def batch_results(tmp_path_factory) -> dict[str, ReferenceCheck]:
    """Every program of BAD plus three others, checked side by side in one warm call (children are the cost)."""
    sources = {name: src for name, (src, _) in BAD.items()}
    sources.update(good=GOOD, named_net=GOOD.replace("class Model", "class Net"), spawner=spawner_program())
    results = check_references(list(sources.values()), num_workers=2, timeout_s=TIMEOUT_S, progress=False)
    return dict(zip(sources, results, strict=True))


@pytest.mark.parametrize("name", list(BAD))
def test_each_bad_reference_is_flagged_with_its_kind(batch_results, name):
    result = batch_results[name]
    expected = BAD[name][1]
    assert not result.ok
    assert expected in result.problems, result.details
    assert expected.value in result.details
    assert result.seconds >= 0  # a killed child reports no time of its own


def test_crash_details_say_what_failed(batch_results):
    assert "boom in forward" in batch_results["crash_forward"].details
    assert "forward raised RuntimeError" in batch_results["crash_forward"].details
    assert "get_inputs" in batch_results["crash_missing_get_inputs"].details
    assert "SyntaxError" in batch_results["crash_syntax"].details
    assert "killed by signal SIGKILL" in batch_results["crash_killed"].details
    assert "EOFError" in batch_results["crash_stdin_is_empty"].details


def test_child_output_keeps_its_head_and_tail(batch_results):
    details = batch_results["crash_noisy"].details
    assert "line 19999" in details and "line 0\n" in details and "line 10000\n" not in details
    assert len(details) < 100_000  # head + tail + traceback, not 20k lines


def test_input_independence_reason_mentions_fixed_inputs(batch_results):
    assert "same inputs under both seeds" in batch_results["fixed_inputs"].details
    # The honest dependence on the weight alone does not make it near-constant.
    assert DropReason.NEAR_CONSTANT not in batch_results["input_independent"].problems


def test_good_references_pass_and_keep_input_order(batch_results):
    good = batch_results["good"]
    assert good.ok and good.problems == [] and good.details == "ok"
    assert good.outputs[0].shape == (8, 32) and good.outputs[0].dtype == "float32"
    assert batch_results["named_net"].problems == [DropReason.CRASH]  # no class named Model
    assert "defines no `Model`" in batch_results["named_net"].details


def test_a_program_that_leaves_a_grandchild_still_gets_its_verdict(batch_results):
    spawner = batch_results["spawner"]
    assert spawner.ok, spawner.details


def test_one_program_with_its_own_entry_point():
    result = check_reference(GOOD.replace("class Model", "class Net"), entry_point="Net", timeout_s=TIMEOUT_S)
    assert result.ok, result.details


def test_hanging_reference_times_out():
    source = program("import time\nwhile True:\n    time.sleep(1)")
    started = time.perf_counter()
    result = check_reference(source, timeout_s=HANG_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    assert result.problems == [DropReason.TIMEOUT], result.details
    assert f"no result after {HANG_TIMEOUT_S:g} s" in result.details
    assert HANG_TIMEOUT_S <= elapsed < HANG_TIMEOUT_S + 10


def test_the_pool_survives_a_timeout_and_keeps_serving():
    hang = program("import time\nwhile True:\n    time.sleep(1)")
    results = check_references([hang, GOOD], num_workers=1, timeout_s=HANG_TIMEOUT_S, progress=False)
    assert [r.problems for r in results] == [[DropReason.TIMEOUT], []]
    assert results[1].ok and results[1].seconds < HANG_TIMEOUT_S


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
