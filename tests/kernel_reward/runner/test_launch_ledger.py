"""The launch ledger's runner side: the C source builds against the CUPTI of Triton's wheel, once per cache
folder, and says in words why it cannot start where there is no GPU driver. What it records on a GPU is
``benchmarks/launch_ledger_probe.py`` (and its gpu test)."""

from __future__ import annotations

import os
import shutil

import pytest

from kernel_reward.ipc import ledger_build
from kernel_reward.runner import launch_ledger


def _built(tmp_path):
    try:
        return ledger_build.build(tmp_path)
    except launch_ledger.LedgerUnavailable as exc:
        if shutil.which("cc") is None or "no CUPTI" in str(exc):
            pytest.skip(str(exc))
        raise


def test_it_builds_once_and_leaves_no_partial_files(tmp_path):
    library = _built(tmp_path)
    assert library.is_file() and library.stat().st_size > 0
    mtime = library.stat().st_mtime_ns
    assert ledger_build.build(tmp_path) == library and library.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == [library.name]


def test_without_a_gpu_starting_it_names_cuptis_error(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the gpu test covers starting it")
    ledger = launch_ledger.LaunchLedger(_built(tmp_path))
    read, write = os.pipe()
    try:
        with pytest.raises(launch_ledger.LedgerUnavailable, match="CUPTI_ERROR"):
            ledger.start(write)
    finally:
        os.close(read)
        os.close(write)


def test_a_broken_compiler_is_an_error_that_says_so(tmp_path, monkeypatch):
    try:
        ledger_build.cupti_paths()
    except launch_ledger.LedgerUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("CC", "false")
    with pytest.raises(launch_ledger.LedgerUnavailable, match="building the launch ledger failed"):
        ledger_build.build(tmp_path)
    assert list(tmp_path.iterdir()) == []
