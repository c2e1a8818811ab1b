"""reference_checks.verdicts: the pure classification of output statistics, tolerances, the verdict type."""

from __future__ import annotations

import json
import math

from dataset_builder.checks import DropReason
from dataset_builder.reference_checks.verdicts import (
    ReferenceCheck,
    classify_outputs,
    tolerance_for,
)
from kernel_reward.judge.reference_run import OutputStats


def stats(**changes) -> OutputStats:
    base = dict(
        index=0, shape=(4, 8), dtype="float32", numel=32, finite=True, max_abs=3.0, rms=1.0, std=1.0,
        repeat_max_abs_diff=0.0, other_input_max_abs_diff=2.5,
    )  # fmt: skip
    return OutputStats(**{**base, **changes})


def kinds(outputs, **kwargs) -> list[DropReason]:
    return [k for k, _ in classify_outputs(outputs, **kwargs)]


def test_classify_outputs_thresholds():
    assert kinds([stats()]) == []
    assert kinds([]) == [DropReason.NO_TENSOR_OUTPUT]
    assert kinds([stats(finite=False, repeat_max_abs_diff=math.nan)]) == [DropReason.NON_FINITE]
    # Reassociation-sized differences are fine; larger ones are nondeterminism.
    assert kinds([stats(repeat_max_abs_diff=1e-7)]) == []
    assert kinds([stats(repeat_max_abs_diff=1e-4)]) == [DropReason.NONDETERMINISTIC]
    assert kinds([stats(repeat_max_abs_diff=math.inf)]) == [DropReason.NONDETERMINISTIC]
    # Input dependence is judged against the evaluator tolerance plus a relative margin.
    assert kinds([stats(other_input_max_abs_diff=0.0)]) == [DropReason.INPUT_INDEPENDENT]
    assert kinds([stats(other_input_max_abs_diff=2e-3)]) == [DropReason.INPUT_INDEPENDENT]
    assert kinds([stats(other_input_max_abs_diff=5e-3)]) == []
    assert kinds([stats(other_input_max_abs_diff=math.inf)]) == []  # shape changed with the input
    # Near zero at the dtype's tolerance; near constant when std is tiny against RMS (never for one element).
    assert kinds([stats(max_abs=5e-5, rms=3e-5, std=3e-5, other_input_max_abs_diff=1.0)]) == [
        DropReason.NEAR_CONSTANT
    ]
    assert kinds(
        [stats(dtype="float16", max_abs=5e-3, rms=3e-3, std=3e-3, other_input_max_abs_diff=1.0)]
    ) == [DropReason.NEAR_CONSTANT]
    assert (
        kinds([stats(dtype="float16", max_abs=5e-2, rms=3e-2, std=3e-2, other_input_max_abs_diff=1.0)]) == []
    )
    assert kinds([stats(rms=5.0, std=4e-3, max_abs=6.0, other_input_max_abs_diff=1.0)]) == [
        DropReason.NEAR_CONSTANT
    ]
    assert (
        kinds([stats(rms=5.0, std=4e-3, max_abs=6.0, numel=1, shape=(), other_input_max_abs_diff=1.0)]) == []
    )
    # Any flagged output of a tuple flags the program; one reason per kind.
    found = classify_outputs(
        [stats(), stats(index=1, other_input_max_abs_diff=0.0), stats(index=2, other_input_max_abs_diff=0.0)]
    )
    assert [k for k, _ in found] == [DropReason.INPUT_INDEPENDENT] and "output 1" in found[0][1]


def test_tolerance_for_dtypes():
    assert tolerance_for("float32") == tolerance_for("torch.float32") == 1e-4
    assert tolerance_for("float16") == tolerance_for("bfloat16") == 1e-2
    assert tolerance_for("int64") == tolerance_for("bool") == 0.0


def test_result_to_dict_is_json_ready():
    result = ReferenceCheck(
        ok=False, problems=[DropReason.TIMEOUT], details="x", seconds=1.5, outputs=[stats()]
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert data["problems"] == ["timeout"] and data["outputs"][0]["shape"] == [4, 8]
