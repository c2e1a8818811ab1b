"""Diagnostic (GPU only): does a sandbox layer slow the runner's matvec down? The judge's-clock fidelity of one
task with the runner started under each policy variant (runner's own claim in the diagnostics)."""

from __future__ import annotations

import dataclasses
import json
import sys

sys.path.insert(0, "scripts")
import bench_reward  # noqa: E402

from kernel_reward.ipc import runner_channel  # noqa: E402
from kernel_reward.judge import pipeline  # noqa: E402
from kernel_reward.sandbox import SandboxPolicy  # noqa: E402

VARIANTS = {
    "default": {},
    "no_clean_env": {"clean_environment": False},
    "no_ro_fs": {"read_only_filesystem": False},
    "no_namespaces": {"isolate_network": False, "private_mounts": False, "isolate_pids": False,
                      "read_only_filesystem": False},
    "no_uid_drop": {"drop_privileges": False},
}


def main() -> None:
    task = sys.argv[1] if len(sys.argv) > 1 else "matmul_matvec"
    rows = []
    for name, change in VARIANTS.items():
        policy = dataclasses.replace(SandboxPolicy(), **change)

        def start(device, policy=policy):
            process = runner_channel.spawn_runner_exec("cuda", policy)
            runner_channel.wait_ready(process)
            return process

        pipeline.start_runner_process = start
        row = bench_reward.fidelity_judge([task], "cuda", 100.0)["rows"][0]
        rows.append({"variant": name, **{k: row.get(k) for k in ("ref_ms", "cand_ms", "speedup", "diagnostics", "error")}})
        print(json.dumps(rows[-1]), flush=True)


if __name__ == "__main__":
    main()
