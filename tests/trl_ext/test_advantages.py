"""Exact tests of trl_ext.advantages against plain loops, plus the statistical unbiasedness claim of TRLOO."""

import math
import random

import pytest
import torch

from trl_ext.advantages import (
    grpo_turn_advantages,
    keep_failed_turns_after_success,
    per_token,
    permute_within_groups,
    trloo_advantages,
    turn_returns,
    untied_groups,
)


def random_ragged(seed, num_groups=5, max_group=5, max_turns=3):
    """Rewards (N, T) with NaN tails, ragged group sizes (singletons included), shuffled group ids."""
    rng = random.Random(seed)
    rows, ids = [], []
    for g in range(num_groups):
        for _ in range(rng.randint(1, max_group)):
            turns = rng.randint(1, max_turns)
            rows.append(
                [rng.choice([0.0, 1.0, rng.uniform(-1, 3)]) for _ in range(turns)]
                + [math.nan] * (max_turns - turns)
            )
            ids.append(g * 7 + 3)  # non-contiguous ids
    order = list(range(len(rows)))
    rng.shuffle(order)
    return torch.tensor([rows[i] for i in order], dtype=torch.float64), torch.tensor([ids[i] for i in order])


def loop_returns(rewards, gamma):
    n, t_max = len(rewards), len(rewards[0])
    out = [[math.nan] * t_max for _ in range(n)]
    for i in range(n):
        for t in range(t_max):
            if math.isnan(rewards[i][t]):
                continue
            total = 0.0
            for k in range(t, t_max):
                if not math.isnan(rewards[i][k]):
                    total += gamma ** (k - t) * rewards[i][k]
            out[i][t] = total
    return out


def loop_advantages(rewards, ids, gamma, leave_one_out, singleton="return"):
    g = loop_returns(rewards.tolist(), gamma)
    n, t_max = rewards.shape
    out = [[0.0] * t_max for _ in range(n)]
    for i in range(n):
        for t in range(t_max):
            if math.isnan(g[i][t]):
                continue
            peers = [g[j][t] for j in range(n) if ids[j] == ids[i] and not math.isnan(g[j][t])]
            if leave_one_out:
                others = [
                    g[j][t] for j in range(n) if j != i and ids[j] == ids[i] and not math.isnan(g[j][t])
                ]
                if not others:
                    out[i][t] = g[i][t] if singleton == "return" else 0.0
                else:
                    out[i][t] = g[i][t] - sum(others) / len(others)
            else:
                out[i][t] = g[i][t] - sum(peers) / len(peers)
    return torch.tensor(out, dtype=torch.float64)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("gamma", [1.0, 0.7])
def test_returns_and_advantages_match_loops(seed, gamma):
    rewards, ids = random_ragged(seed)
    expected_g = torch.tensor(loop_returns(rewards.tolist(), gamma), dtype=torch.float64)
    assert torch.allclose(turn_returns(rewards, gamma), expected_g, equal_nan=True)
    for singleton in ("return", "zero"):
        got = trloo_advantages(rewards, ids, gamma, singleton=singleton)
        assert torch.allclose(got, loop_advantages(rewards, ids.tolist(), gamma, True, singleton))
    got = grpo_turn_advantages(rewards, ids, gamma)
    assert torch.allclose(got, loop_advantages(rewards, ids.tolist(), gamma, False))


def test_trloo_closed_form_and_singletons():
    # One group of 3 at turn 1, of which 2 reach turn 2 and 1 reaches turn 3 (a lone sample).
    rewards = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, math.nan], [0.5, math.nan, math.nan]])
    ids = torch.tensor([0, 0, 0])
    adv = trloo_advantages(rewards, ids)
    g = turn_returns(rewards)
    # N/(N-1) * (G - mean) at turn 1 with N = 3
    mean1 = g[:, 0].mean()
    assert torch.allclose(adv[:, 0], 1.5 * (g[:, 0] - mean1))
    assert adv[0, 2] == g[0, 2]  # lone sample at turn 3 gets A = G
    assert adv[1, 2] == 0 and adv[2, 1] == 0  # turns that did not happen
    assert trloo_advantages(rewards, ids, singleton="zero")[0, 2] == 0


def test_grpo_std_scaling_matches_torch_std():
    rewards = torch.tensor([[1.0], [0.0], [3.0], [2.0], [2.5]])
    ids = torch.tensor([0, 0, 0, 1, 1])
    adv = grpo_turn_advantages(rewards, ids, scale_by_std=True, eps=0.0)
    first = rewards[:3, 0]
    assert torch.allclose(adv[:3, 0], (first - first.mean()) / first.std())


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="after a missing"):
        turn_returns(torch.tensor([[math.nan, 1.0]]))
    with pytest.raises(ValueError, match="2-D"):
        turn_returns(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="group_ids"):
        trloo_advantages(torch.zeros(3, 2), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="gamma"):
        turn_returns(torch.zeros(1, 1), gamma=1.5)
    with pytest.raises(ValueError, match="singleton"):
        trloo_advantages(torch.zeros(2, 1), torch.tensor([0, 0]), singleton="mean")


def test_failed_after_success_and_tie_filter():
    rewards = torch.tensor([[0.0, 1.0, 0.0], [1.0, -0.5, 2.0], [0.0, 0.0, math.nan]])
    keep = keep_failed_turns_after_success(rewards)
    assert keep.tolist() == [[True, True, False], [True, False, True], [True, True, False]]
    ids = torch.tensor([0, 0, 1])
    rewards2 = torch.tensor([[1.0, 2.0], [0.0, 2.0], [0.5, math.nan]])
    # group 0 ties on its last turn (2.0 == 2.0); group 1 is a singleton (always ties)
    assert untied_groups(rewards2, ids).tolist() == [False, False, False]
    rewards3 = torch.tensor([[1.0, 2.0], [0.0, 1.0], [0.5, math.nan]])
    assert untied_groups(rewards3, ids).tolist() == [True, True, False]


def test_tie_filter_leaves_out_trajectories_without_a_scored_turn():
    nan = math.nan
    rewards = torch.tensor([[nan, nan], [1.0, nan], [0.0, nan], [nan, nan], [0.5, 0.5]])
    ids = torch.tensor([0, 0, 0, 1, 1])
    # group 0: its scored members (1.0, 0.0) differ; group 1: one scored member ties with itself
    assert untied_groups(rewards, ids).tolist() == [False, True, True, False, False]


def test_per_token_spreads_turn_values():
    values = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    turn_ids = torch.tensor([[0, 0, 1, -1], [0, 1, 1, 1]])
    assert per_token(values, turn_ids).tolist() == [[1, 1, 2, 0], [3, 4, 4, 4]]
    with pytest.raises(ValueError, match="reference turn"):
        per_token(values, torch.tensor([[2], [0]]))


def test_trloo_gradient_unbiased_grpo_shrinks():
    """Softmax bandit with a known policy gradient; MC mean of the group estimator vs the exact gradient.

    Each group draws N actions; estimator g = (1/N) sum_i A_i grad log pi(a_i). Exact: grad J = sum_a pi(a)
    (r(a) - J) e_a. TRLOO must match grad J, self-included GRPO (1 - 1/N) grad J, both within 4 MC standard
    errors per component; and GRPO must be detectably off grad J.
    """
    gen = torch.Generator().manual_seed(1234)
    logits = torch.tensor([0.3, -0.2, 0.5, 0.0], dtype=torch.float64)
    reward = torch.tensor([1.0, 0.0, 2.0, -1.0], dtype=torch.float64)
    probs = torch.softmax(logits, 0)
    exact = probs * (reward - (probs * reward).sum())  # (K,)
    n, groups = 3, 60000
    actions = torch.multinomial(probs.expand(groups, -1), n, replacement=True, generator=gen)  # (G, N)
    r = reward[actions].reshape(-1, 1)  # (G*N, 1): one turn
    ids = torch.arange(groups).repeat_interleave(n)
    score = torch.nn.functional.one_hot(actions.reshape(-1), 4).double() - probs  # grad log pi (G*N, K)

    def estimates(adv):  # per-group gradient estimates (G, K)
        return (adv[:, :1] * score).reshape(groups, n, 4).mean(dim=1)

    for adv, factor in ((trloo_advantages(r, ids), 1.0), (grpo_turn_advantages(r, ids), 1 - 1 / n)):
        est = estimates(adv)
        mean, se = est.mean(0), est.std(0) / math.sqrt(groups)
        assert (mean - factor * exact).abs().le(4 * se).all(), (mean, factor * exact, se)
    grpo_mean = estimates(grpo_turn_advantages(r, ids)).mean(0)
    grpo_se = estimates(grpo_turn_advantages(r, ids)).std(0) / math.sqrt(groups)
    assert ((grpo_mean - exact).abs() > 4 * grpo_se).any()


@pytest.mark.parametrize("seed", range(5))
def test_the_control_permutes_rewards_within_groups_and_turns(seed):
    rewards, group_ids = random_ragged(seed)
    shuffled = permute_within_groups(rewards, group_ids, torch.Generator().manual_seed(seed))
    assert torch.equal(torch.isnan(shuffled), torch.isnan(rewards))  # turns not reached stay so
    for group in group_ids.unique():
        for turn in range(rewards.size(1)):
            rows = (group_ids == group) & ~torch.isnan(rewards[:, turn])
            assert sorted(shuffled[rows, turn].tolist()) == sorted(rewards[rows, turn].tolist())
    again = permute_within_groups(rewards, group_ids, torch.Generator().manual_seed(seed))
    assert torch.equal(torch.nan_to_num(again, nan=-9), torch.nan_to_num(shuffled, nan=-9))  # seeded


def test_the_control_breaks_the_link_between_a_sample_and_its_reward():
    """Over many draws a sample's permuted reward is each of its group's rewards about equally often."""
    rewards = torch.tensor([[0.0], [1.0], [2.0], [3.0]])
    group_ids = torch.zeros(4, dtype=torch.long)
    generator = torch.Generator().manual_seed(0)
    draws = torch.stack([permute_within_groups(rewards, group_ids, generator) for _ in range(4000)])
    first = draws[:, 0, 0]
    shares = [float((first == value).float().mean()) for value in range(4)]
    assert all(abs(share - 0.25) < 0.03 for share in shares), shares
    with pytest.raises(ValueError, match="group_ids"):
        permute_within_groups(rewards, torch.zeros(3, dtype=torch.long), generator)
