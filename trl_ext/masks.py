"""Pure tensor assembly for the trainer: per-turn statistics of trajectories, the (B, L) turn ids and (B, T)
rewards of a generation batch, the loss-keep mask from the turn / row / token filters, and the number of trained
turns the 'turn_sum_mean' loss divides by. No trainer state, no distributed calls."""

from __future__ import annotations

import torch

from trl_ext.advantages import per_token
from trl_ext.rollout import Trajectory

# Per-turn statistics gathered across processes for logging (order of the last axis of the stats tensor).
TURN_STATS = (
    "reward",
    "formatted",
    "compiled",
    "correct",
    "hacked",
    "fast_1",
    "fast_1.2",
    "fast_1_lower",
    "fast_1.2_lower",
    "speedup",
    "coverage",
    "tokens",
    "truncated",
)


def turn_stats(traj: Trajectory, max_turns: int) -> torch.Tensor:
    """(T, K) float stats of one trajectory, NaN for turns that did not happen or fields that do not apply."""
    stats = torch.full((max_turns, len(TURN_STATS)), float("nan"))
    tokens_per_turn = [sum(1 for t in traj.turn_ids if t == k) for k in range(max_turns)]
    for k, turn in enumerate(traj.turns):
        r = turn.result
        good = bool(r.correct) and not bool(r.hacked)
        timed = r.speedup is not None
        low = r.speedup_low if r.speedup_low is not None else r.speedup  # no interval: the point estimate
        values = {
            "reward": r.reward,
            "formatted": r.formatted,
            "compiled": r.compiled,
            "correct": r.correct,
            "hacked": r.hacked,
            # Fast@p counts over all samples; unknown when a correct sample has no timing (CPU interpreter).
            "fast_1": (good and r.speedup >= 1.0) if timed else (False if not good else None),
            "fast_1.2": (good and r.speedup >= 1.2) if timed else (False if not good else None),
            # ...and by the lower end of the speedup's 95 % interval: a claim that is not noise.
            "fast_1_lower": (good and low >= 1.0) if timed else (False if not good else None),
            "fast_1.2_lower": (good and low >= 1.2) if timed else (False if not good else None),
            "speedup": r.speedup if good else None,
            "coverage": r.coverage if good else None,
            "tokens": tokens_per_turn[k],
            "truncated": turn.truncated,
        }
        for j, name in enumerate(TURN_STATS):
            if values[name] is not None:
                stats[k, j] = float(values[name])
    return stats


def turn_tensors(trajs: list[Trajectory], width: int, max_turns: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, L) 0-based turn of each completion token (-1 on feedback and padding) and (B, T) turn rewards (NaN for
    turns that did not happen, and for every turn of a trajectory with an unscored turn: its returns are unknown,
    so it enters neither the baselines nor the loss)."""
    turn_ids = torch.full((len(trajs), width), -1, dtype=torch.long)
    rewards = torch.full((len(trajs), max_turns), float("nan"))
    for n, traj in enumerate(trajs):
        turn_ids[n, : len(traj.turn_ids)] = torch.tensor(traj.turn_ids, dtype=torch.long)
        if all(turn.result.scored for turn in traj.turns):
            rewards[n, : len(traj.turns)] = torch.tensor(traj.rewards)
    return turn_ids, rewards


def loss_keep(
    keep_turns: torch.Tensor, keep_rows: torch.Tensor, keep_tokens: torch.Tensor, turn_ids: torch.Tensor
) -> torch.Tensor:
    """(B, L) bool: tokens that carry loss, from kept turns (B, T), kept rows (B,) and kept tokens (B, L)."""
    return per_token(keep_turns.float(), turn_ids).bool() & keep_rows.unsqueeze(1) & keep_tokens


def trained_turns(loss_mask: torch.Tensor, turn_ids: torch.Tensor, max_turns: int) -> torch.Tensor:
    """Number of (row, turn) pairs with at least one loss token (the divisor of 'turn_sum_mean')."""
    turns = torch.arange(max_turns, device=turn_ids.device)  # (T,)
    in_turn = turn_ids.unsqueeze(-1) == turns  # (B, L, T)
    return (in_turn & loss_mask.bool().unsqueeze(-1)).any(dim=1).sum()
