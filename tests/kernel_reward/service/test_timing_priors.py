"""The pool's timing-prior store: freshness, a use budget, and what it refuses to keep."""

import pytest

from kernel_reward.service.config import PoolConfig
from kernel_reward.service.timing_priors import MAX_PRIOR_BYTES, PriorStore

KEY = "ab" * 32


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_prior_is_handed_out_while_fresh_and_within_its_uses():
    clock = Clock()
    store = PriorStore(max_age_s=30.0, max_uses=2, clock=clock)
    assert store.get(KEY) is None
    assert store.put(KEY, {"calls": 4})
    clock.now += 10
    assert store.get(KEY) == {"calls": 4, "age_s": 10.0, "uses": 1}
    assert store.get(KEY)["uses"] == 2
    assert store.get(KEY) is None  # used up: the next judge measures afresh
    assert store.put(KEY, {"calls": 5})
    clock.now += 31
    assert store.get(KEY) is None  # stale
    assert (store.stored, store.handed_out) == (2, 2)


def test_malformed_offers_are_refused_and_nothing_is_kept():
    store = PriorStore(max_age_s=30.0, max_uses=8)
    for key, prior in (
        ("short", {"calls": 1}),
        (KEY.upper(), {"calls": 1}),
        (None, {"calls": 1}),
        (KEY, ["not", "a", "mapping"]),
        (KEY, {"before": [float("nan")]}),
        (KEY, {"before": "x" * (MAX_PRIOR_BYTES + 1)}),
    ):
        assert store.put(key, prior) is False
    assert store.get(KEY) is None and store.stored == 0


def test_zero_uses_turns_reuse_off_and_negative_settings_are_refused():
    store = PriorStore(max_age_s=30.0, max_uses=0)
    assert store.put(KEY, {"calls": 4}) is False and store.get(KEY) is None
    with pytest.raises(ValueError, match="timing_prior"):
        PoolConfig(timing_prior_max_uses=-1)
    with pytest.raises(ValueError, match="timing_prior"):
        PoolConfig(timing_prior_max_age_s=float("nan"))
