"""Saved-completions JSONL: strict parsing with line numbers, and a write/read round trip."""

import json

import pytest

from kernel_eval.completions import (
    CompletionsError,
    SavedTrajectory,
    parse_completions,
    read_completions,
    write_completions,
)


def line(uuid="t1", sample=0, turn=1, completion="x", **extra):
    return json.dumps({"uuid": uuid, "sample": sample, "turn": turn, "completion": completion, **extra})


def test_parses_and_orders_turns():
    lines = [line(turn=2, completion="b"), "", line(turn=1, completion="a"), line(uuid="t0", sample=3)]
    trajectories = parse_completions(lines)
    assert trajectories == [SavedTrajectory("t0", 3, ("x",)), SavedTrajectory("t1", 0, ("a", "b"))]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", r"<completions>:2: not valid JSON"),
        ("[1, 2]", r":2: expected a JSON object"),
        (json.dumps({"uuid": "t", "sample": 0, "turn": 1}), r":2: missing key\(s\) \['completion'\]"),
        (line(turn=0), r":2: 'turn' must be an integer >= 1"),
        (line(sample=True), r":2: 'sample' must be a non-negative integer"),
        (line(uuid=""), r":2: 'uuid' must be a non-empty string"),
        (line(completion=None), r":2: 'completion' must be a string"),
        (line(), r":2: duplicate \(uuid='t1', sample=0, turn=1\); first seen on line 1"),
    ],
)
def test_errors_name_the_line(bad, message):
    with pytest.raises(CompletionsError, match=message):
        parse_completions([line(), bad])


def test_gap_in_turns_is_an_error():
    with pytest.raises(CompletionsError, match=r"uuid='t1' sample=0 lacks turn\(s\) \[2\]"):
        parse_completions([line(turn=1), line(turn=3)])


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(CompletionsError, match="not found"):
        read_completions(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CompletionsError, match="empty"):
        read_completions(tmp_path / "empty.jsonl")


def test_round_trip(tmp_path):
    trajectories = [
        SavedTrajectory("a", 0, ("one\n```python\nx\n```", "two")),
        SavedTrajectory("b", 1, ("z",)),
    ]
    write_completions(tmp_path / "c.jsonl", trajectories)
    assert read_completions(tmp_path / "c.jsonl") == trajectories


def test_extra_keys_are_logged_not_dropped_silently(caplog):
    with caplog.at_level("WARNING"):
        parse_completions([line(model="m")])
    assert "extra key(s) ['model']" in caplog.text
