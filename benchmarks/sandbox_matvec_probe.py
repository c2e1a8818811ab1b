"""Diagnostic (GPU only): does a sandbox layer slow the runner's matvec down? The judge's-clock fidelity of one
task with the runner started under each policy variant (runner's own claim in the diagnostics)."""

from __future__ import annotations

import dataclasses
import json
import sys

import bench_reward  # benchmarks/bench_reward.py: a script's own folder is first on sys.path

from kernel_reward.ipc import runner_channel
from kernel_reward.judge import pipeline
from kernel_reward.sandbox import SandboxPolicy

VARIANTS = {
    "default": {},
    "no_clean_env": {"clean_environment": False},
    "no_ro_fs": {"read_only_filesystem": False},
    "no_namespaces": {
        "isolate_network": False,
        "private_mounts": False,
        "isolate_pids": False,
        "read_only_filesystem": False,
    },
    "no_uid_drop": {"drop_privileges": False},
}


def main() -> None:
    task = sys.argv[1] if len(sys.argv) > 1 else "matmul_matvec"
    rows = []
    for name, change in VARIANTS.items():
        policy = dataclasses.replace(SandboxPolicy(), **change)

        def start(mode, policy=policy):
            process = runner_channel.spawn_runner_exec("cuda", policy)
            runner_channel.wait_ready(process)
            return process

        pipeline.start_runner_process = start
        row = bench_reward.fidelity_judge([task], "cuda", 100.0)["rows"][0]
        rows.append(
            {
                "variant": name,
                **{k: row.get(k) for k in ("ref_ms", "cand_ms", "speedup", "diagnostics", "error")},
            }
        )
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
