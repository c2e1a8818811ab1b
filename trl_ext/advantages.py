"""Turn-level returns and advantages for multi-turn RL (pure tensor functions, no trainer state).

Follows the Dr. Kernel paper (background §4): a trajectory i of a prompt group has up to T turns with rewards R(i, t);
the return is G(i, t) = sum_{t' >= t} gamma^(t'-t) R(i, t'). TRLOO (turn-level REINFORCE leave-one-out) uses as
baseline the mean return of the *other* samples of the group that reached the same turn, which keeps the policy
gradient unbiased; the turn-level GRPO baseline includes the sample itself and shrinks the expected gradient by
(1 - 1/N_t). Both are here so they can be compared.

Conventions shared by every function:
- ``rewards`` is (N, T) float; NaN marks a turn that did not happen. Turns happen as a prefix: once a turn is
  NaN, every later turn of that row must be NaN too (checked).
- ``group_ids`` is (N,) int: samples of the same prompt share an id (ids need not be contiguous or sorted).
- Advantages are 0 where the turn did not happen.
"""

from __future__ import annotations

from typing import Literal

import torch

SingletonRule = Literal["return", "zero"]


def _check_rewards(rewards: torch.Tensor) -> torch.Tensor:
    """Validate the (N, T) reward matrix and return its "turn happened" mask (N, T) bool."""
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be 2-D (N samples, T turns), got shape {tuple(rewards.shape)}")
    if not rewards.is_floating_point():
        raise ValueError(
            f"rewards must be a float tensor (NaN marks missing turns), got dtype {rewards.dtype}"
        )
    present = ~torch.isnan(rewards)  # (N, T)
    if torch.isinf(rewards).any():
        raise ValueError("rewards contain +/-inf; use NaN only for turns that did not happen")
    # A turn can only happen if the previous one did: present must be non-increasing along T.
    if rewards.size(1) > 1 and (present[:, 1:] & ~present[:, :-1]).any():
        rows = torch.nonzero((present[:, 1:] & ~present[:, :-1]).any(dim=1)).flatten().tolist()
        raise ValueError(f"rewards rows {rows[:10]} have a reward after a missing (NaN) turn")
    return present


def _check_groups(group_ids: torch.Tensor, num_rows: int) -> torch.Tensor:
    if group_ids.dim() != 1 or group_ids.numel() != num_rows:
        raise ValueError(f"group_ids must be 1-D with {num_rows} entries, got shape {tuple(group_ids.shape)}")
    if group_ids.is_floating_point():
        raise ValueError(f"group_ids must be integers, got dtype {group_ids.dtype}")
    return torch.unique(group_ids, return_inverse=True)[1]  # (N,) dense ids 0..G-1


def turn_returns(rewards: torch.Tensor, gamma: float = 1.0) -> torch.Tensor:
    """Discounted returns to go.

    Args:
        rewards: (N, T) float, NaN for turns that did not happen.
        gamma: discount per turn, in [0, 1].

    Returns:
        (N, T) G(i, t) = sum_{t' >= t} gamma^(t'-t) R(i, t'), NaN kept where the turn did not happen.
    """
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    present = _check_rewards(rewards)
    filled = torch.nan_to_num(rewards, nan=0.0)  # (N, T)
    returns = torch.empty_like(filled)
    running = torch.zeros_like(filled[:, 0])  # (N,)
    for t in reversed(range(filled.size(1))):  # T is small (<= a handful of turns)
        running = filled[:, t] + gamma * running
        returns[:, t] = running
    return returns.masked_fill(~present, float("nan"))


def _group_turn_sums(values: torch.Tensor, present: torch.Tensor, dense_ids: torch.Tensor):
    """Per (group, turn) sums of present values and counts of present samples, broadcast back to rows."""
    num_groups = int(dense_ids.max().item()) + 1 if dense_ids.numel() else 0
    zeros = torch.zeros(num_groups, values.size(1), dtype=values.dtype, device=values.device)
    sums = zeros.index_add(0, dense_ids, torch.where(present, values, torch.zeros_like(values)))  # (G, T)
    counts = zeros.index_add(0, dense_ids, present.to(values.dtype))  # (G, T)
    return sums[dense_ids], counts[dense_ids]  # (N, T), (N, T)


def trloo_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    gamma: float = 1.0,
    singleton: SingletonRule = "return",
) -> torch.Tensor:
    """Turn-level REINFORCE leave-one-out advantages.

    A(i, t) = G(i, t) - mean of G(j, t) over the other samples j of i's group that reached turn t
            = N_t / (N_t - 1) * (G(i, t) - mean_t).

    Args:
        rewards: (N, T) float, NaN for turns that did not happen.
        group_ids: (N,) int, same id = same prompt.
        gamma: discount per turn.
        singleton: what a sample gets when it is the only one of its group at turn t: "return" gives A = G
            (the paper's public code), "zero" gives A = 0 (no baseline, no signal).

    Returns:
        (N, T) advantages, 0 where the turn did not happen.
    """
    if singleton not in ("return", "zero"):
        raise ValueError(f"singleton must be 'return' or 'zero', got {singleton!r}")
    returns = turn_returns(rewards, gamma)  # (N, T)
    present = ~torch.isnan(returns)  # (N, T)
    dense = _check_groups(group_ids, rewards.size(0))
    sums, counts = _group_turn_sums(returns, present, dense)  # (N, T) each
    own = torch.nan_to_num(returns, nan=0.0)
    others = (counts - 1).clamp(min=1)
    advantages = own - (sums - own) / others  # (N, T)
    lone = counts <= 1
    advantages = torch.where(lone, own if singleton == "return" else torch.zeros_like(own), advantages)
    return advantages.masked_fill(~present, 0.0)


def grpo_turn_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    gamma: float = 1.0,
    scale_by_std: bool = False,
    eps: float = 1e-4,
) -> torch.Tensor:
    """Turn-level GRPO advantages: the baseline is the group mean at turn t INCLUDING the sample itself.

    A(i, t) = (G(i, t) - mean_{j in group, reached t} G(j, t)) [/ (std + eps) if scale_by_std].
    Kept for ablations: its expected policy gradient is (1 - 1/N_t) times the true one. A lone sample gets 0.

    Args:
        rewards: (N, T) float, NaN for turns that did not happen.
        group_ids: (N,) int.
        gamma: discount per turn.
        scale_by_std: divide by the group's (unbiased) standard deviation at that turn, as GRPO does.
        eps: added to the std.

    Returns:
        (N, T) advantages, 0 where the turn did not happen.
    """
    returns = turn_returns(rewards, gamma)  # (N, T)
    present = ~torch.isnan(returns)
    dense = _check_groups(group_ids, rewards.size(0))
    sums, counts = _group_turn_sums(returns, present, dense)  # (N, T)
    own = torch.nan_to_num(returns, nan=0.0)
    mean = sums / counts.clamp(min=1)  # (N, T)
    advantages = own - mean
    if scale_by_std:
        sq_sums, _ = _group_turn_sums((own - mean) ** 2, present, dense)
        std = torch.sqrt(sq_sums / (counts - 1).clamp(min=1))  # (N, T), unbiased like torch.std
        advantages = advantages / (std + eps)
    return advantages.masked_fill(~present, 0.0)


def keep_failed_turns_after_success(rewards: torch.Tensor) -> torch.Tensor:
    """(N, T) bool: False for a turn with reward <= 0 that comes after a turn of the same row with reward > 0.

    The paper leaves such turns out of the loss (a regression after a success should not teach the model that
    the earlier success was bad). Missing turns are False too (they carry no loss anyway).
    """
    present = _check_rewards(rewards)
    filled = torch.nan_to_num(rewards, nan=0.0)
    succeeded_before = torch.zeros_like(present)  # (N, T)
    if rewards.size(1) > 1:
        succeeded_before[:, 1:] = torch.cummax((filled[:, :-1] > 0).int(), dim=1).values.bool()
    return present & ~(succeeded_before & (filled <= 0))


def untied_groups(rewards: torch.Tensor, group_ids: torch.Tensor, atol: float = 1e-6) -> torch.Tensor:
    """(N,) bool: False for every sample of a group whose last-turn rewards all tie (zero-variance filter).

    "Last-turn reward" is the reward at each trajectory's final reached turn. A trajectory without a scored
    turn (all NaN: an infrastructure failure) takes no part and is False; a group with fewer than two scored
    trajectories ties.
    """
    present = _check_rewards(rewards)
    dense = _check_groups(group_ids, rewards.size(0))
    num_turns = present.sum(dim=1)  # (N,)
    scored = num_turns > 0  # (N,)
    last = rewards.gather(1, (num_turns - 1).clamp(min=0).unsqueeze(1)).squeeze(1)  # (N,), NaN where unscored
    num_groups = int(dense.max().item()) + 1
    empty = torch.full((num_groups,), float("inf"), dtype=last.dtype)
    high = (-empty).scatter_reduce(0, dense[scored], last[scored], "amax")
    low = empty.scatter_reduce(0, dense[scored], last[scored], "amin")
    return scored & ((high - low)[dense] > atol)


def permute_within_groups(
    rewards: torch.Tensor, group_ids: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """The control arm's rewards: at each turn, the rewards of a group's samples that reached it, shuffled among
    them (a uniform random permutation per group and turn). Each group keeps its rewards' distribution, so its
    baselines and spread are unchanged; which sample earned which reward is lost. NaN (turns not reached) stay.

    Because later turns of a row can move to another row than its earlier ones, a shuffled row is no trajectory's
    reward history: the returns of a permuted row mix samples, as a control should.
    """
    present = _check_rewards(rewards)
    dense = _check_groups(group_ids, rewards.size(0))
    shuffled = rewards.clone()
    for group in range(int(dense.max().item()) + 1 if dense.numel() else 0):
        members = dense == group
        for turn in range(rewards.size(1)):
            rows = torch.nonzero(members & present[:, turn]).flatten()
            if rows.numel() > 1:
                order = rows[torch.randperm(rows.numel(), generator=generator)]
                shuffled[rows, turn] = rewards[order, turn]
    return shuffled


def per_token(turn_values: torch.Tensor, turn_ids: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    """Spread per-turn values over tokens.

    Args:
        turn_values: (N, T) values per turn (advantages, masks as float...).
        turn_ids: (N, L) long, the turn (0-based) each token belongs to; -1 for padding.
        fill: value for padding tokens.

    Returns:
        (N, L) tensor with turn_values[n, turn_ids[n, l]].
    """
    if turn_ids.dim() != 2 or turn_ids.size(0) != turn_values.size(0):
        raise ValueError(
            f"turn_ids must be (N, L) with N={turn_values.size(0)}, got shape {tuple(turn_ids.shape)}"
        )
    if (turn_ids >= turn_values.size(1)).any():
        raise ValueError(
            f"turn_ids reference turn {int(turn_ids.max())} but only {turn_values.size(1)} exist"
        )
    gathered = turn_values.gather(1, turn_ids.clamp(min=0))  # (N, L)
    return gathered.masked_fill(turn_ids < 0, fill)
