"""Start (or stop) kernel reward worker actors on a Ray cluster; a thin wrapper over ``python -m kernel_reward serve``.

    ray start --head --port 6379                      # on the head node
    ray start --address HEAD_IP:6379                  # on every other GPU node
    python scripts/serve_rewards.py --address auto    # one actor per GPU, each with a warm sandboxed pool
    python scripts/serve_rewards.py stop --address auto

Trainers then use ``Evaluator(backend="ray", ray_address="auto")`` (or ``KernelReward(backend="ray")``), which
finds the served actors by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without an install
    from kernel_reward.__main__ import main

    argv = sys.argv[1:]
    if not argv or argv[0] not in ("serve", "stop", "-h", "--help"):
        argv = ["serve", *argv]
    sys.exit(main(argv))
