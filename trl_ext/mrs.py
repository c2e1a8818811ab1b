"""Mismatch rejection sampling (MRS) and profiling-based rejection sampling (PRS): pure tensor functions.

MRS (background §4): the rollout engine and the trainer can disagree on token probabilities (different
kernels, precision, batching). With rho = pi_train / pi_rollout per model token, a trajectory is kept only
when the geometric mean exp(mean log rho) over its model tokens lies in [lower, upper] and no token has rho <
veto. Rejected samples get no loss (no importance weights are applied to the kept ones). Turn- and token-level
variants apply the same test to each turn or to each token. A row (turn, token) with a NaN rollout log-prob
(one the engine cannot provide) among its masked tokens is rejected (fail closed).

PRS (background §3): a CORRECT turn is kept with probability clip((PR - threshold) / softness, 0, 1), where PR
is the profiling coverage; incorrect turns are always kept. Rejected turns still count in the other samples'
baselines (the caller only masks the loss).

``mrs_loss_mask`` turns any level's decision into one (N, L) token mask plus the counts the rejection metric
needs, so a trainer can apply MRS as a loss mask wherever it has trainer log-probs (e.g. inside the loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

MRSLevel = Literal["trajectory", "turn", "token"]


def _check_inputs(train_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor) -> None:
    if train_logps.shape != rollout_logps.shape or train_logps.shape != mask.shape or train_logps.dim() != 2:
        raise ValueError(
            "train_logps, rollout_logps and mask must all be (N, L); got "
            f"{tuple(train_logps.shape)}, {tuple(rollout_logps.shape)}, {tuple(mask.shape)}"
        )


def _check_bounds(lower: float, upper: float, veto: float) -> None:
    if not 0.0 < lower <= 1.0 <= upper:
        raise ValueError(f"MRS bounds must satisfy 0 < lower <= 1 <= upper, got lower={lower}, upper={upper}")
    if not 0.0 < veto < 1.0:
        raise ValueError(f"MRS veto must be in (0, 1), got {veto}")


def log_ratio(train_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, L) log rho = log pi_train - log pi_rollout on masked tokens, 0 elsewhere (NaN kept where masked)."""
    _check_inputs(train_logps, rollout_logps, mask)
    diff = train_logps.float() - rollout_logps.float()  # (N, L)
    return torch.where(mask.bool(), diff, torch.zeros_like(diff))


def mrs_keep(
    train_logps: torch.Tensor,
    rollout_logps: torch.Tensor,
    mask: torch.Tensor,
    lower: float = 0.999,
    upper: float = 1.001,
    veto: float = 1e-4,
) -> torch.Tensor:
    """Trajectory-level MRS.

    Args:
        train_logps: (N, L) per-token log-probs under the trainer.
        rollout_logps: (N, L) per-token log-probs reported by the rollout engine (after temperature).
        mask: (N, L) 0/1, 1 on model tokens (feedback and padding are 0).
        lower, upper: accepted range of the geometric-mean ratio.
        veto: reject the row if any masked token has rho below this.

    Returns:
        (N,) bool, True = keep. A row without any masked token is kept (it carries no loss either way).
    """
    _check_bounds(lower, upper, veto)
    lr = log_ratio(train_logps, rollout_logps, mask)  # (N, L)
    m = mask.bool()
    count = m.sum(dim=1)  # (N,)
    geo = torch.exp(lr.sum(dim=1) / count.clamp(min=1))  # (N,), NaN if a masked token is NaN
    vetoed = (m & (lr < math.log(veto))).any(dim=1)
    in_range = (geo >= lower) & (geo <= upper)  # False for NaN
    return (in_range & ~vetoed) | (count == 0)


def mrs_keep_turns(
    train_logps: torch.Tensor,
    rollout_logps: torch.Tensor,
    mask: torch.Tensor,
    turn_ids: torch.Tensor,
    num_turns: int,
    lower: float = 0.999,
    upper: float = 1.001,
    veto: float = 1e-4,
) -> torch.Tensor:
    """Turn-level MRS: the trajectory test applied to the model tokens of each turn separately.

    Args:
        turn_ids: (N, L) long, 0-based turn of each token (-1 for padding).
        num_turns: T.

    Returns:
        (N, T) bool, True = keep that turn. Turns without model tokens are kept.
    """
    _check_bounds(lower, upper, veto)
    if turn_ids.shape != mask.shape:
        raise ValueError(
            f"turn_ids must be (N, L) like mask, got {tuple(turn_ids.shape)} vs {tuple(mask.shape)}"
        )
    lr = log_ratio(train_logps, rollout_logps, mask)  # (N, L)
    m = mask.bool() & (turn_ids >= 0)
    index = turn_ids.clamp(min=0)
    n = lr.size(0)
    sums = torch.zeros(n, num_turns, dtype=lr.dtype, device=lr.device).scatter_add(1, index, lr * m)  # (N, T)
    counts = torch.zeros(n, num_turns, dtype=lr.dtype, device=lr.device).scatter_add(1, index, m.to(lr.dtype))
    low_token = (m & (lr < math.log(veto))).to(lr.dtype)
    vetoed = torch.zeros(n, num_turns, dtype=lr.dtype, device=lr.device).scatter_add(1, index, low_token) > 0
    geo = torch.exp(sums / counts.clamp(min=1))  # (N, T)
    return ((geo >= lower) & (geo <= upper) & ~vetoed) | (counts == 0)


def mrs_keep_tokens(
    train_logps: torch.Tensor,
    rollout_logps: torch.Tensor,
    mask: torch.Tensor,
    lower: float = 0.999,
    upper: float = 1.001,
    veto: float = 1e-4,
) -> torch.Tensor:
    """Token-level MRS: (N, L) bool, keep a masked token iff its own ratio is in [max(lower, veto), upper].

    Unmasked tokens are True (the caller's mask already excludes them). Per-token ratios are far noisier than
    a geometric mean, so token-level bounds usually need to be wider than the trajectory defaults.
    """
    _check_bounds(lower, upper, veto)
    lr = log_ratio(train_logps, rollout_logps, mask)
    rho = torch.exp(lr)
    ok = (rho >= max(lower, veto)) & (rho <= upper)
    return ok | ~mask.bool()


@dataclass(frozen=True)
class MRSMask:
    """MRS decision for a batch, as a loss mask.

    keep: (N, L) bool, False on tokens whose trajectory / turn / own ratio was rejected; True elsewhere
        (tokens outside the MRS mask are left to the caller's own mask).
    rejected, judged: 0-dim float tensors, the rejected and judged units (rows, turns with model tokens, or
        model tokens, by level); left on the input device so callers can sum them across processes.
    """

    keep: torch.Tensor
    rejected: torch.Tensor
    judged: torch.Tensor


def mrs_loss_mask(
    train_logps: torch.Tensor,
    rollout_logps: torch.Tensor,
    mask: torch.Tensor,
    level: MRSLevel,
    turn_ids: torch.Tensor | None = None,
    num_turns: int | None = None,
    lower: float = 0.999,
    upper: float = 1.001,
    veto: float = 1e-4,
) -> MRSMask:
    """MRS at ``level`` as an (N, L) token keep mask (``mrs_keep`` / ``mrs_keep_turns`` / ``mrs_keep_tokens``).

    Args:
        train_logps, rollout_logps, mask: (N, L), as for ``mrs_keep``; ``mask`` = all model tokens of each
            trajectory (the statistics are taken over them, whatever other loss masks say).
        level: "trajectory", "turn" or "token".
        turn_ids: (N, L) long, 0-based turn of each token, -1 elsewhere; needed for level "turn".
        num_turns: T, needed for level "turn".

    Returns:
        ``MRSMask``. Judged units: every row (trajectory level), every turn holding at least one model token
        (turn level; a turn without model tokens has nothing to judge and is kept), every model token (token).
    """
    m = mask.bool()  # (N, L)
    if level == "trajectory":
        rows = mrs_keep(train_logps, rollout_logps, mask, lower, upper, veto)  # (N,)
        keep = rows.unsqueeze(1).expand_as(m)
        rejected, judged = (~rows).sum(), torch.tensor(rows.numel(), device=rows.device)
    elif level == "turn":
        if turn_ids is None or num_turns is None:
            raise ValueError("MRS level 'turn' needs turn_ids (N, L) and num_turns")
        turns = mrs_keep_turns(
            train_logps, rollout_logps, mask, turn_ids, num_turns, lower, upper, veto
        )  # (N, T)
        index = turn_ids.clamp(min=0)
        keep = torch.gather(turns, 1, index) | (turn_ids < 0)  # (N, L)
        model_in_turn = (m & (turn_ids >= 0)).float()  # (N, L)
        has_tokens = (
            torch.zeros(turns.shape, device=m.device).scatter_add(1, index, model_in_turn) > 0
        )  # (N, T)
        rejected, judged = (has_tokens & ~turns).sum(), has_tokens.sum()
    elif level == "token":
        keep = mrs_keep_tokens(train_logps, rollout_logps, mask, lower, upper, veto)  # (N, L)
        rejected, judged = (m & ~keep).sum(), m.sum()
    else:
        raise ValueError(f"MRS level must be 'trajectory', 'turn' or 'token', got {level!r}")
    return MRSMask(keep=keep, rejected=rejected.float(), judged=judged.float())


def mean_abs_log_ratio(train_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor) -> float:
    """Mean |log rho| over masked tokens that have both log-probs (a mismatch metric); 0.0 without tokens."""
    lr = log_ratio(train_logps, rollout_logps, mask)
    valid = mask.bool() & ~torch.isnan(lr)
    return float(lr[valid].abs().mean()) if valid.any() else 0.0


def abs_log_ratio_sum(
    train_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum of |log rho|, count) over masked tokens with both log-probs, as 0-dim float tensors (no host sync)."""
    lr = log_ratio(train_logps, rollout_logps, mask)
    valid = mask.bool() & ~torch.isnan(lr)
    return torch.where(valid, lr.abs(), torch.zeros_like(lr)).sum(), valid.sum().float()


def prs_keep_probability(
    coverage: torch.Tensor,
    correct: torch.Tensor,
    threshold: float = 0.3,
    softness: float = 0.1,
) -> torch.Tensor:
    """Probability of keeping each turn under PRS.

    Args:
        coverage: any shape, PR in [0, 1]; NaN where profiling was unavailable (e.g. CPU interpreter).
        correct: same shape, bool.
        threshold, softness: keep probability clip((coverage - threshold) / softness, 0, 1).

    Returns:
        float tensor of the same shape: 1 for incorrect turns; for correct turns the clipped ramp, or 1 when
        coverage is unknown (nothing to judge the kernel by; callers count these separately).
    """
    if coverage.shape != correct.shape:
        raise ValueError(
            f"coverage and correct must have the same shape, got {coverage.shape} vs {correct.shape}"
        )
    if softness <= 0:
        raise ValueError(f"PRS softness must be > 0, got {softness}")
    cov = coverage.float()
    ramp = ((cov - threshold) / softness).clamp(0.0, 1.0)
    ramp = torch.where(torch.isnan(cov), torch.ones_like(ramp), ramp)
    return torch.where(correct.bool(), ramp, torch.ones_like(ramp))


def prs_sample(keep_probability: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Bernoulli draw of the PRS keep mask (bool, same shape). Probabilities of exactly 0 / 1 are deterministic."""
    draws = torch.rand(keep_probability.shape, generator=generator, device=keep_probability.device)
    return draws < keep_probability
