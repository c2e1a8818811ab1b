"""Two CPU processes (gloo): a prompt's samples split across ranks still get the TRLOO advantages a single
process computes on the whole group, and MRS decided inside the loss counts over both ranks.

Launched with ``torch.distributed.run`` rather than ``accelerate launch``: accelerate's multi-CPU launcher needs
MPI (``--mpirun_hostfile``), and without it starts a single process. torchrun sets the same RANK / WORLD_SIZE /
MASTER_* variables, from which the Trainer's accelerator sets up gloo exactly as under accelerate.
"""

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trl_ext.advantages import trloo_advantages

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_cross_rank_groups_match_single_process(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        str(ROOT / "tests/support/trl_dist_worker.py"),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    uuids_per_rank = [{s["uuid"] for s in samples} for samples in ranks]
    assert uuids_per_rank[0] & uuids_per_rank[1], (
        "expected at least one prompt group split across the two ranks"
    )
    samples = ranks[0] + ranks[1]
    max_turns = max(len(s["rewards"]) for s in samples)
    rewards = torch.tensor([s["rewards"] + [math.nan] * (max_turns - len(s["rewards"])) for s in samples])
    ids = {u: i for i, u in enumerate(sorted({s["uuid"] for s in samples}))}
    expected = trloo_advantages(rewards, torch.tensor([ids[s["uuid"]] for s in samples]))
    for n, s in enumerate(samples):
        assert s["advantages"] == pytest.approx(expected[n, : len(s["rewards"])].tolist(), abs=1e-6)
    assert any(len(s["rewards"]) < max_turns for s in samples) or max_turns == 1  # ragged turn counts
    # MRS inside the loss: the rejection metric and DAPO's token normaliser are global over both ranks.
    mrs = [json.loads((tmp_path / f"mrs_rank{r}.json").read_text()) for r in (0, 1)]
    kept_tokens = sum(m["local_loss_tokens"] for m in mrs)
    assert all(m["num_items_in_batch"] == kept_tokens for m in mrs), mrs
    assert all(m["rejected_frac"] == pytest.approx(1 / sum(m["local_rows"] for m in mrs)) for m in mrs), mrs
