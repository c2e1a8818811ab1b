"""Reference-time cache: keys separate references, devices and timing settings; only GPU timings are stored."""

from __future__ import annotations

from kernel_reward.options import EvalOptions
from kernel_reward.ref_cache import ReferenceTimeCache, reference_key
from kernel_reward.result import EvalResult, Status, TimingStats

REF = "import torch\nclass Model:\n    pass\n"


def _gpu_result(median_ms: float) -> EvalResult:
    stats = TimingStats(median_ms=median_ms, mean_ms=median_ms, p10_ms=median_ms, p90_ms=median_ms, num_samples=50)
    return EvalResult(status=Status.CORRECT, device="NVIDIA H200", timing_available=True, reference_timing=stats)


def test_key_semantics():
    opts = EvalOptions()
    base = reference_key(REF, "NVIDIA H200", opts)
    assert reference_key(REF.replace("\n", "\r\n") + "\n\n", "NVIDIA H200", opts) == base  # formatting only
    assert reference_key(REF + "x = 1\n", "NVIDIA H200", opts) != base
    assert reference_key(REF, "NVIDIA H100", opts) != base
    assert reference_key(REF, "NVIDIA H200", EvalOptions(timing_budget_ms=100.0)) != base
    assert reference_key(REF, "NVIDIA H200", EvalOptions(num_trials=3)) == base  # not a timing setting


def test_record_get_and_persist(tmp_path):
    path = tmp_path / "refs.json"
    cache = ReferenceTimeCache(path)
    opts = EvalOptions()
    assert not cache.record(REF, opts, EvalResult(status=Status.CORRECT, device="cpu"))  # interpreter: no timing
    assert cache.record(REF, opts, _gpu_result(0.5))
    assert cache.record(REF, opts, _gpu_result(0.4))
    assert cache.get(REF, "NVIDIA H200", opts).median_ms == 0.4
    assert cache.get(REF, "NVIDIA H100", opts) is None
    reloaded = ReferenceTimeCache(path)
    assert len(reloaded) == 1 and reloaded.get(REF, "NVIDIA H200", opts).num_samples == 50


def test_timing_lock_file_is_shared_across_users(tmp_path):
    """Sticky world-writable folder, world-readable lock file (flock works on a read-only descriptor)."""
    import fcntl
    import os
    import stat

    from kernel_reward.pool import timing_lock_file

    path = timing_lock_file(tmp_path / "locks", "cuda:3")
    assert path.name == "cuda3.lock" and path.exists()
    assert stat.S_IMODE((tmp_path / "locks").stat().st_mode) == 0o1777
    assert stat.S_IMODE(path.stat().st_mode) & 0o044 == 0o044
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    assert timing_lock_file(tmp_path / "locks", "cuda:3") == path  # idempotent
