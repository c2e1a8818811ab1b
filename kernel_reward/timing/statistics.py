"""Statistics of timing samples, pure: the summary of one side, the speedup as a ratio of medians and its
bootstrap intervals (paired and unpaired)."""

from __future__ import annotations

import numpy as np

from kernel_reward.result import TimingStats


def summarize(samples_ms: list[float]) -> TimingStats:
    values = np.asarray(samples_ms, dtype=np.float64)
    return TimingStats(
        median_ms=float(np.median(values)),
        mean_ms=float(values.mean()),
        p10_ms=float(np.percentile(values, 10)),
        p90_ms=float(np.percentile(values, 90)),
        num_samples=int(values.size),
    )


def speedup_of(reference_ms: list[float], candidate_ms: list[float]) -> float:
    """median(reference) / median(candidate)."""
    return float(np.median(reference_ms) / max(np.median(candidate_ms), 1e-9))


def bootstrap_speedup_ci(
    reference_ms: list[float], candidate_ms: list[float], *, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the ratio of medians, resampling the (ref, cand) pairs together."""
    ref = np.asarray(reference_ms, dtype=np.float64)
    cand = np.asarray(candidate_ms, dtype=np.float64)
    n = min(ref.size, cand.size)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))  # (B, n)
    ratios = np.median(ref[:n][idx], axis=1) / np.maximum(np.median(cand[:n][idx], axis=1), 1e-9)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_ratio_ci_unpaired(
    reference_ms: list[float], candidate_ms: list[float], *, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of median(reference) / median(candidate), each side resampled on its own
    (for samples that were not taken in pairs, e.g. a reference timed before the candidate was loaded)."""
    ref = np.asarray(reference_ms, dtype=np.float64)
    cand = np.asarray(candidate_ms, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ref_medians = np.median(ref[rng.integers(0, ref.size, size=(resamples, ref.size))], axis=1)
    cand_medians = np.median(cand[rng.integers(0, cand.size, size=(resamples, cand.size))], axis=1)
    low, high = np.percentile(ref_medians / np.maximum(cand_medians, 1e-9), [2.5, 97.5])
    return float(low), float(high)


class TimingValidationError(Exception):
    """A timed call of the candidate returned a wrong answer (the candidate behaves differently while timed)."""
