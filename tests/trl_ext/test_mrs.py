"""Exact tests of trl_ext.mrs (MRS / PRS masks) against plain loops over random ragged inputs."""

import math

import pytest
import torch

from trl_ext.mrs import (
    abs_log_ratio_sum,
    mean_abs_log_ratio,
    mrs_keep,
    mrs_keep_tokens,
    mrs_keep_turns,
    mrs_loss_mask,
    prs_keep_probability,
    prs_sample,
)


def random_case(seed, n=9, length=12, num_turns=3):
    gen = torch.Generator().manual_seed(seed)
    rollout = -torch.rand(n, length, generator=gen, dtype=torch.float64) * 3
    # Mostly tiny mismatches, some large ones, one veto-sized drop.
    noise = torch.randn(n, length, generator=gen, dtype=torch.float64) * 10 ** (
        -torch.randint(1, 5, (n, 1), generator=gen)
    )
    train = rollout + noise
    train[seed % n, 0] = rollout[seed % n, 0] - 12.0  # rho ~ 6e-6 < veto
    mask = (torch.rand(n, length, generator=gen) > 0.3).long()
    mask[-1] = 0  # a row without model tokens
    turn_ids = torch.sort(torch.randint(0, num_turns, (n, length), generator=gen), dim=1).values
    return train, rollout, mask, turn_ids


def loop_keep(train, rollout, mask, lower, upper, veto):
    keep = []
    for i in range(train.size(0)):
        ratios = [math.exp(train[i, j] - rollout[i, j]) for j in range(train.size(1)) if mask[i, j]]
        if not ratios:
            keep.append(True)
            continue
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        keep.append(lower <= geo <= upper and min(ratios) >= veto)
    return keep


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("bounds", [(0.999, 1.001, 1e-4), (0.99, 1.02, 1e-3)])
def test_mrs_matches_loop(seed, bounds):
    train, rollout, mask, turn_ids = random_case(seed)
    lower, upper, veto = bounds
    assert mrs_keep(train, rollout, mask, lower, upper, veto).tolist() == loop_keep(
        train, rollout, mask, *bounds
    )
    # Turn level = the trajectory rule applied to each turn's tokens.
    turns = mrs_keep_turns(train, rollout, mask, turn_ids, 3, lower, upper, veto)
    for t in range(3):
        sub = mask * (turn_ids == t)
        assert turns[:, t].tolist() == loop_keep(train, rollout, sub, *bounds)
    tokens = mrs_keep_tokens(train, rollout, mask, lower, upper, veto)
    for i in range(train.size(0)):
        for j in range(train.size(1)):
            rho = math.exp(train[i, j] - rollout[i, j])
            assert tokens[i, j].item() == (not mask[i, j] or (max(lower, veto) <= rho <= upper))


@pytest.mark.parametrize("seed", range(6))
def test_mrs_loss_mask_matches_loop(seed):
    """The token mask of each level is that level's decision spread over its tokens; counts match a loop."""
    train, rollout, mask, turn_ids = random_case(seed)
    turn_ids = turn_ids.clone()
    turn_ids[:, -2:] = -1  # padding / feedback positions carry no turn
    turn_ids[1] = torch.where(turn_ids[1] == 1, -1, turn_ids[1])  # a row whose turn 2 has no tokens at all
    mask = mask * (turn_ids >= 0)
    n, length = train.shape
    rows = loop_keep(train, rollout, mask, 0.999, 1.001, 1e-4)
    turns = [loop_keep(train, rollout, mask * (turn_ids == t), 0.999, 1.001, 1e-4) for t in range(3)]
    expected = {
        "trajectory": [[rows[i]] * length for i in range(n)],
        "turn": [[turn_ids[i, j] < 0 or turns[turn_ids[i, j]][i] for j in range(length)] for i in range(n)],
        "token": [
            [not mask[i, j] or 0.999 <= math.exp(train[i, j] - rollout[i, j]) <= 1.001 for j in range(length)]
            for i in range(n)
        ],
    }
    judged_turns = [(i, t) for i in range(n) for t in range(3) if (mask[i] * (turn_ids[i] == t)).sum() > 0]
    counts = {
        "trajectory": (sum(not k for k in rows), n),
        "turn": (sum(not turns[t][i] for i, t in judged_turns), len(judged_turns)),
        "token": (sum(not expected["token"][i][j] for i in range(n) for j in range(length)), int(mask.sum())),
    }
    for level in ("trajectory", "turn", "token"):
        got = mrs_loss_mask(train, rollout, mask, level, turn_ids, 3)
        assert got.keep.tolist() == [[bool(x) for x in row] for row in expected[level]], level
        assert (got.rejected.item(), got.judged.item()) == counts[level], level
    with pytest.raises(ValueError, match="turn_ids"):
        mrs_loss_mask(train, rollout, mask, "turn")
    with pytest.raises(ValueError, match="level"):
        mrs_loss_mask(train, rollout, mask, "sequence")
    total, count = abs_log_ratio_sum(train, rollout, mask)
    assert total.item() / count.item() == pytest.approx(mean_abs_log_ratio(train, rollout, mask))


def test_mrs_nan_rollout_logprob_rejects_and_identical_keeps():
    logps = -torch.rand(3, 5)
    mask = torch.ones(3, 5)
    assert mrs_keep(logps, logps.clone(), mask).all()
    rollout = logps.clone()
    rollout[1, 2] = float("nan")
    assert mrs_keep(logps, rollout, mask).tolist() == [True, False, True]
    assert mean_abs_log_ratio(logps, logps + 0.5, mask) == pytest.approx(0.5)


def test_mrs_bad_inputs():
    x = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="lower"):
        mrs_keep(x, x, x, lower=1.1)
    with pytest.raises(ValueError, match="veto"):
        mrs_keep(x, x, x, veto=0.0)
    with pytest.raises(ValueError, match=r"\(N, L\)"):
        mrs_keep(x, torch.zeros(2, 4), x)


def test_prs_probability_and_sampling():
    coverage = torch.tensor([0.1, 0.35, 0.5, 0.9, float("nan"), 0.0])
    correct = torch.tensor([True, True, True, True, True, False])
    p = prs_keep_probability(coverage, correct)
    expected = [0.0, 0.5, 1.0, 1.0, 1.0, 1.0]
    assert torch.allclose(p, torch.tensor(expected))
    draws = torch.stack([prs_sample(p, torch.Generator().manual_seed(s)) for s in range(4000)]).float()
    assert draws[:, 0].sum() == 0 and draws[:, 2:].all()
    assert abs(draws[:, 1].mean().item() - 0.5) < 4 * math.sqrt(0.25 / 4000)
    with pytest.raises(ValueError, match="softness"):
        prs_keep_probability(coverage, correct, softness=0.0)
