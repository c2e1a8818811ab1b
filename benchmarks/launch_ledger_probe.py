"""Does the launch ledger see every kernel a process runs, and what does it cost? (needs CUDA)

The ledger (``kernel_reward/runner/native/launch_ledger.c``) records kernels below Python with CUPTI's activity
API and writes them to a descriptor that ``kernel_reward.ipc.ledger`` reads. Two child processes, one with the
ledger started right after the CUDA context and one without, each create the context and compile a tiny
Triton kernel (start-up), launch it and a torch addition ``--launches`` times, flush with marker 1, then time the
kernel with ``triton.testing.do_bench`` (the ledger's cost per launch). The parent reads the ledger's pipe while
the child runs (a full pipe would stall CUPTI's thread) and prints: records of each kernel against launches
made, drops, malformed lines, the records' median duration beside do_bench, start-up with and without.

    python benchmarks/launch_ledger_probe.py --launches 200 --json-out launch_ledger.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TRITON_KERNEL = "ledger_probe_add"


def child(fd: int | None, launches: int, cache: Path) -> dict:
    """One child's run (the ledger on ``fd`` when given, started once the CUDA context exists, as the runner
    would start it: after its own start-up, before any candidate code); returns its timings."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    timings["cuda_context_s"] = time.perf_counter() - start
    if fd is not None:
        from kernel_reward.ipc.ledger_build import build
        from kernel_reward.runner.launch_ledger import LaunchLedger

        ledger = LaunchLedger(build(cache))
        ledger.start(fd)
    timings["ledger_start_s"] = time.perf_counter() - start - timings["cuda_context_s"]

    @triton.jit
    def ledger_probe_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(
            out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask
        )

    assert ledger_probe_add.__name__ == TRITON_KERNEL
    x = torch.randn(4096, device="cuda")
    y = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)

    def launch():
        ledger_probe_add[(4,)](x, y, out, x.numel(), BLOCK=1024)

    launch()
    torch.cuda.synchronize()
    timings["first_launch_s"] = time.perf_counter() - start
    for _ in range(launches):
        launch()
        torch.add(x, y, out=out)
    torch.cuda.synchronize()
    if fd is not None:
        ledger.flush(1)
    timings["do_bench_ms"] = do_bench(launch, warmup=50, rep=300)
    if fd is not None:
        ledger.flush(2)
    return timings


def run_child(with_ledger: bool, launches: int, cache: Path) -> tuple[dict, str]:
    """Run one child; returns its timings and (with the ledger) everything it wrote to the ledger's pipe."""
    read_fd, write_fd = os.pipe() if with_ledger else (None, None)
    command = [sys.executable, __file__, "--child", "--launches", str(launches), "--cache", str(cache)]
    if write_fd is not None:
        command += ["--fd", str(write_fd)]
    received: list[bytes] = []
    reader = None
    if read_fd is not None:

        def drain() -> None:
            while chunk := os.read(read_fd, 1 << 16):
                received.append(chunk)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
    done = subprocess.run(
        command, pass_fds=() if write_fd is None else (write_fd,), capture_output=True, text=True, check=False
    )
    if write_fd is not None:
        os.close(write_fd)  # the child's copy is gone: the reader ends at EOF
        reader.join(timeout=60)
        os.close(read_fd)
    if done.returncode != 0:
        raise SystemExit(
            f"the child ({'with' if with_ledger else 'without'} the ledger) failed:\n{done.stderr}"
        )
    return json.loads(done.stdout.strip().splitlines()[-1]), b"".join(received).decode(errors="replace")


def summarize(launches: int, with_ledger: dict, without: dict, text: str) -> dict:
    from kernel_reward.ipc.ledger import parse

    chunks = parse(text)
    marked = [chunk for chunk in chunks if chunk.marker == 1]
    first = marked[0] if marked else None
    counts: dict[str, int] = {}
    for kernel in first.kernels if first else []:
        counts[kernel.name] = counts.get(kernel.name, 0) + 1
    own = [k.duration_ns / 1e6 for chunk in chunks for k in chunk.kernels if k.name == TRITON_KERNEL]
    return {
        "launches": launches,
        "triton_records_before_marker_1": counts.get(TRITON_KERNEL, 0),
        "triton_launches_before_marker_1": launches + 1,  # the first, compiling launch included
        "other_records_before_marker_1": sum(n for name, n in counts.items() if name != TRITON_KERNEL),
        "top_kernels": sorted(counts.items(), key=lambda item: -item[1])[:5],
        "markers": [chunk.marker for chunk in chunks],
        "dropped": sum(chunk.dropped for chunk in chunks),
        "malformed": sum(chunk.malformed for chunk in chunks),
        "record_median_ms": statistics.median(own) if own else None,
        "with_ledger": with_ledger,
        "without_ledger": without,
        "do_bench_ratio": with_ledger["do_bench_ms"] / without["do_bench_ms"],
    }


def print_table(summary: dict) -> None:
    rows = [
        ("Triton records / launches (to marker 1)",
         f"{summary['triton_records_before_marker_1']} / {summary['triton_launches_before_marker_1']}"),
        ("other kernels recorded (torch adds: launches)",
         f"{summary['other_records_before_marker_1']} ({summary['launches']})"),
        ("markers, dropped, malformed", f"{summary['markers']}, {summary['dropped']}, {summary['malformed']}"),
        ("the ledger's start, s", f"{summary['with_ledger']['ledger_start_s']:.3f}"),
        ("start-up to first launch done, s (with / without)",
         f"{summary['with_ledger']['first_launch_s']:.2f} / {summary['without_ledger']['first_launch_s']:.2f}"),
        ("do_bench ms (with / without, ratio)",
         f"{summary['with_ledger']['do_bench_ms']:.4f} / {summary['without_ledger']['do_bench_ms']:.4f}, "
         f"{summary['do_bench_ratio']:.3f}"),
        ("the records' median kernel ms", f"{summary['record_median_ms']}"),
    ]  # fmt: skip
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--launches", type=int, default=200, help="launches of each kernel before marker 1")
    parser.add_argument("--json-out", type=Path, help="write the summary here")
    parser.add_argument(
        "--cache", type=Path, help="where the compiled ledger is kept (default: a temporary folder)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fd", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.launches < 1:
        parser.error("--launches must be at least 1")
    if args.child:
        print(json.dumps(child(args.fd, args.launches, args.cache)))
        return 0
    import torch

    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU (CUPTI records kernels that run on one)")
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or Path(tmp)
        from kernel_reward.ipc.ledger_build import build

        build(cache)  # once, before either child is timed
        without, _ = run_child(False, args.launches, cache)
        with_ledger, text = run_child(True, args.launches, cache)
    summary = summarize(args.launches, with_ledger, without, text)
    print_table(summary)
    if args.json_out is not None:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
