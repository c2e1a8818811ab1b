"""Numbers the judge draws in secret, and numbers it takes from the runner.

Hidden seeds: every input set gets its own 63-bit seed from a keyed hash, so one seen set tells nothing about the
next (an affine sequence of one 30-bit secret does). Runner replies: a number the runner sends is a claim; a
non-finite or absurd one is dropped, never an internal error and never kept in a result.
"""

from __future__ import annotations

import math

import pytest

from kernel_reward.judge.correctness import trial_seeds
from kernel_reward.judge.coverage import coverage_from_reply
from kernel_reward.judge.seeds import SEED_BITS, SeedStream
from kernel_reward.result import EvalResult


def test_hidden_trial_seeds_are_63_bit_and_fresh_per_evaluation():
    first, second = trial_seeds(None, 8), trial_seeds(None, 8)
    assert set(first).isdisjoint(second)
    assert all(0 <= seed < 2**SEED_BITS for seed in first + second)
    assert max(first + second) > 2**40  # not drawn from a 30- or 31-bit space


def test_trial_seeds_are_not_an_affine_sequence():
    """Knowing two seeds of an evaluation (from its inputs) must not give the third."""
    for base in (None, 1, 1234):
        seeds = trial_seeds(base, 6)
        steps = {b - a for a, b in zip(seeds, seeds[1:], strict=False)}
        assert len(steps) == len(seeds) - 1, seeds


def test_a_given_seed_base_reproduces_its_seeds():
    assert trial_seeds(1234, 5) == trial_seeds(1234, 5)
    assert set(trial_seeds(1, 5)).isdisjoint(trial_seeds(2, 5))


def test_seed_streams_are_independent():
    a, b = SeedStream(), SeedStream()
    assert [a.seed(i) for i in range(4)] != [b.seed(i) for i in range(4)]
    assert a.seed(3) == a.seed(3)


@pytest.mark.parametrize(
    "row",
    [
        {"name": "k", "device_time_ms": 1.0, "calls": math.inf, "from_candidate": True},
        {"name": "k", "device_time_ms": math.nan, "calls": 3, "from_candidate": True},
        {"name": "k", "device_time_ms": math.inf, "calls": 3, "from_candidate": True},
        {"name": "k", "device_time_ms": -1.0, "calls": 3, "from_candidate": True},
        {"name": "k", "device_time_ms": 1.0, "calls": 10**30, "from_candidate": True},
        {"name": "k", "device_time_ms": 1.0, "calls": -2, "from_candidate": True},
    ],
    ids=["calls_inf", "time_nan", "time_inf", "time_negative", "calls_huge", "calls_negative"],
)
def test_coverage_rows_with_impossible_numbers_are_dropped(row):
    result = EvalResult()
    honest = {"name": "ok", "device_time_ms": 0.5, "calls": 2, "from_candidate": True}
    coverage_from_reply(
        {"type": "coverage", "coverage": 0.5, "table": [row, honest]}, result, frozenset({"ok"})
    )
    assert [r.name for r in result.kernel_table] == ["ok"]
    assert all(math.isfinite(r.device_time_ms) for r in result.kernel_table)


@pytest.mark.parametrize("coverage", [math.inf, -math.inf, math.nan, True, "0.9", None])
def test_a_coverage_that_is_not_a_finite_number_is_not_taken(coverage):
    result = EvalResult()
    coverage_from_reply({"type": "coverage", "coverage": coverage, "table": []}, result, frozenset())
    assert result.coverage is None


def _row(name: str, ms: float, own: bool) -> dict:
    return {"name": name, "device_time_ms": ms, "calls": 4, "from_candidate": own}


def test_the_judge_computes_coverage_and_ignores_the_runners_number():
    """A rewritten runner that answers coverage 0.97 over a table whose own rows hold 10 % of the device time
    gets 0.1, and the difference is flagged."""
    result = EvalResult()
    table = [_row("add_relu_kernel", 0.1, True), _row("[other device work]", 0.9, False)]
    reply = {"type": "coverage", "coverage": 0.97, "table": table}
    coverage_from_reply(reply, result, frozenset({"add_relu_kernel"}))
    assert result.coverage == pytest.approx(0.1)
    assert any(flag.startswith("coverage_claim_differs") for flag in result.flags)
    honest = EvalResult()
    coverage_from_reply({**reply, "coverage": 0.1}, honest, frozenset({"add_relu_kernel"}))
    assert honest.coverage == pytest.approx(0.1) and not any("differs" in flag for flag in honest.flags)


def test_a_row_is_own_only_when_the_source_defines_a_jit_function_of_that_name():
    """The runner calls torch's kernel the candidate's own: the judge's reading of the source does not define
    it, so it is not own, and the flag names it. A row the runner disowns stays disowned (a library's Triton
    kernel that shares a name with one of the candidate's)."""
    result = EvalResult()
    table = [
        _row("touch_kernel", 0.01, True),
        _row("vectorized_elementwise_kernel", 0.5, True),
        _row("matmul_kernel", 0.49, False),
    ]
    coverage_from_reply(
        {"type": "coverage", "coverage": 1.0, "table": table},
        result,
        frozenset({"touch_kernel", "matmul_kernel"}),
    )
    assert result.coverage == pytest.approx(0.01)
    owners = {row.name: row.from_candidate for row in result.kernel_table}
    assert owners == {"touch_kernel": True, "vectorized_elementwise_kernel": False, "matmul_kernel": False}
    assert any(
        "kernel_owner_differs" in flag and "vectorized_elementwise_kernel" in flag for flag in result.flags
    )


def test_coverage_counts_rows_beyond_the_kept_table_and_refuses_an_endless_one():
    """Every row enters the share (only the first 50 are kept in the result); a table longer than the judge
    reads gives no coverage, with a flag, rather than a share of part of it."""
    from kernel_reward.judge.coverage import MAX_PARSED_ROWS, MAX_TABLE_ROWS

    rows = [_row(f"aten_{i}", 1.0, False) for i in range(MAX_TABLE_ROWS + 49)] + [_row("mine", 1.0, True)]
    result = EvalResult()
    coverage_from_reply({"type": "coverage", "coverage": 0.01, "table": rows}, result, frozenset({"mine"}))
    assert result.coverage == pytest.approx(0.01) and len(result.kernel_table) == MAX_TABLE_ROWS
    result = EvalResult()
    endless = [_row("mine", 1.0, True)] * (MAX_PARSED_ROWS + 1)
    coverage_from_reply({"type": "coverage", "coverage": 1.0, "table": endless}, result, frozenset({"mine"}))
    assert result.coverage is None and any("coverage_table_too_long" in flag for flag in result.flags)


def test_redact_error_keeps_the_candidate_and_libraries_and_drops_the_rest():
    from kernel_reward.judge.feedback import redact_error

    text = (
        "candidate forward raised: ValueError: bad\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app/kernel_reward/runner/runner.py", line 297, in _run_calls\n'
        "    execute_call(model, args)\n"
        "    ^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1778, in _call_impl\n'
        "    return forward_call(*args)\n"
        '  File "/tmp/kr_eval_x/work/_kr_ref_9_0.py", line 4, in forward\n'
        "    return secret_reference_line\n"
        '  File "/tmp/runner/work/_kr_cand_3_0.py", line 12, in forward\n'
        "    raise ValueError(open('/srv/app/state/config.json').read())\n"
        "ValueError: bad /srv/app/state/config.json\n"
    )
    redacted = redact_error(text)
    assert "kernel_reward" not in redacted and "/srv/" not in redacted and "/tmp/" not in redacted
    assert "secret_reference_line" not in redacted and "execute_call" not in redacted
    assert 'File "torch/nn/modules/module.py", line 1778, in _call_impl' in redacted
    assert 'File "candidate.py", line 12, in forward' in redacted
    assert redacted.endswith("ValueError: bad config.json\n")
    assert redact_error(None) is None and redact_error("plain message") == "plain message"
