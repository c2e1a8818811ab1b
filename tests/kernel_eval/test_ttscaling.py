"""Test-time scaling context selection: best w turns by reward, chronological, full history kept outside."""

import pytest

from kernel_eval.ttscaling import HistoryTurn, context_messages, select_context

PROMPT = [{"role": "user", "content": "optimise Model"}]


def history(rewards):
    return [
        HistoryTurn(turn=i + 1, completion=f"c{i + 1}", feedback=f"f{i + 1}", reward=r)
        for i, r in enumerate(rewards)
    ]


def test_selects_best_window_in_chronological_order():
    h = history([0.0, 1.5, 0.2, 1.0, 2.0, 0.1])
    assert [t.turn for t in select_context(h, window=4)] == [2, 3, 4, 5]
    assert [t.turn for t in select_context(h, window=2)] == [2, 5]


def test_ties_prefer_recent_turns_and_short_history_is_kept_whole():
    assert [t.turn for t in select_context(history([0.0, 0.0, 0.0]), window=2)] == [2, 3]
    assert [t.turn for t in select_context(history([1.0]), window=4)] == [1]
    assert select_context([], window=4) == []


def test_context_messages_interleave_completion_and_feedback():
    messages = context_messages(PROMPT, history([0.0, 3.0, 1.0]), window=2)
    assert messages == [
        PROMPT[0],
        {"role": "assistant", "content": "c2"},
        {"role": "user", "content": "f2"},
        {"role": "assistant", "content": "c3"},
        {"role": "user", "content": "f3"},
    ]


def test_bad_arguments():
    with pytest.raises(ValueError, match="window"):
        select_context(history([1.0]), window=0)
    with pytest.raises(ValueError, match="duplicate"):
        select_context(history([1.0]) * 2)
    with pytest.raises(ValueError, match="empty"):
        context_messages([], [])
