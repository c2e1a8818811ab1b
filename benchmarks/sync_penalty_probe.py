"""How much does the reward's clock charge a candidate for synchronising the host inside its forward?

On the H200 (``results/production_kernels_h200_run_o.json``) liger's cross-entropy kernel read 0.42x by the
reward and 1.23x by ``triton.testing.do_bench``; its forward copies three values to the host per call. The
judge queues a batch of calls behind one gate and its own stream waits on the runner's
(``kernel_reward.timing.batch_clock``): a forward that blocks the runner's host on the GPU may cost more there
than in a single process (the suspected mechanism, context switches between the judge's and the runner's
contexts at every synchronisation, is what the ``mps`` step of tools/gpu_judge_check.sh tests).

This probe isolates it: one Triton kernel (an elementwise ``relu(x) + 1`` on N floats) behind ``ModelNew``
variants that add 0, 1 or 3 host synchronisations per call (``.item()`` of one output element), each scored by
the reward and by ``do_bench`` against the same PyTorch reference. If the reward's speedup falls with the
synchronisations much faster than do_bench's, the judge's clock penalises host syncs.

    python benchmarks/sync_penalty_probe.py --json-out benchmarks/results/sync_penalty_h200.json   # needs CUDA
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REFERENCE = '''"""relu(x) + 1 on a vector."""
import torch
import torch.nn as nn

N = {n}


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
'''

CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_plus_one(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0) + 1.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_plus_one[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        for _ in range({syncs}):
            if out[0].item() < 1.0:  # a host synchronisation, as a data-dependent check would do
                raise RuntimeError("impossible: relu(x) + 1 >= 1")
        return out
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1 << 22, help="vector length (default 4M floats)")
    parser.add_argument("--syncs", type=int, nargs="+", default=[0, 1, 3], help="host syncs per call to try")
    parser.add_argument("--json-out", type=Path, help="write the rows as JSON")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("sync_penalty_probe needs a CUDA GPU (the question is about the GPU clock)", file=sys.stderr)
        return 2
    from benchmarks.production_kernels.bench import do_bench_pair
    from kernel_reward import Evaluator

    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="sync_probe_") as scratch,
        Evaluator(device="cuda", workers=1) as ev,
    ):
        reference = REFERENCE.format(n=args.n)
        reference_path = Path(scratch) / "reference.py"
        reference_path.write_text(reference)
        for syncs in args.syncs:
            candidate = CANDIDATE.format(syncs=syncs)
            candidate_path = Path(scratch) / f"candidate_{syncs}.py"
            candidate_path.write_text(candidate)
            result = ev.evaluate(reference, candidate)
            bench = do_bench_pair(reference_path, candidate_path)
            rows.append(
                {
                    "syncs": syncs,
                    "status": result.status.value,
                    "reward_speedup": result.speedup,
                    "reward_kernel_ms": result.kernel_time_ms,
                    "reward_reference_ms": result.reference_time_ms,
                    "do_bench_speedup": bench.speedup,
                    "do_bench_candidate_ms": bench.candidate_ms,
                    "do_bench_reference_ms": bench.reference_ms,
                    "flags": result.flags,
                }
            )
    print(
        f"{'syncs':>5} {'status':>8} {'reward x':>9} {'reward ms':>10} {'do_bench x':>11} {'do_bench ms':>12}"
    )
    for row in rows:
        speed = row["reward_speedup"]
        print(
            f"{row['syncs']:>5} {row['status']:>8} {speed if speed is None else round(speed, 3)!s:>9} "
            f"{row['reward_kernel_ms'] or float('nan'):>10.4f} {row['do_bench_speedup']:>11.3f} "
            f"{row['do_bench_candidate_ms']:>12.4f}"
        )
    if args.json_out:
        args.json_out.write_text(
            json.dumps({"n": args.n, "device": torch.cuda.get_device_name(), "rows": rows}, indent=1) + "\n"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
