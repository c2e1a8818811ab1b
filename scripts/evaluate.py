#!/usr/bin/env python
"""Evaluate saved completions or a model on kernel tasks (Fast@p per turn, report, plots).

    python scripts/evaluate.py --dataset DIR_OR_NAME --completions FILE.jsonl --out OUT [--device cpu|cuda]
    python scripts/evaluate.py --dataset DIR_OR_NAME --model PATH [--adapter PATH] --out OUT
    python scripts/evaluate.py --compare RUN_A RUN_B

Same as the ``drkernel-evaluate`` console command; see ``--help`` and kernel_eval/cli.py.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from kernel_eval.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
