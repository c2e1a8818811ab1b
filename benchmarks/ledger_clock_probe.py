"""Are the launch ledger's timestamps on the GPU's own clock? (needs CUDA)

A judge-side time anchor for the ledger's records (each record tied to the gated batch it ran in) needs the
records' start and end on a clock the judge can read too. Each of two child processes starts the ledger, then
launches a one-program Triton kernel that reads the GPU's ``%globaltimer`` as it starts and again as it ends,
``--launches`` times ``--interval-ms`` apart. The parent pairs each CUPTI record with the kernel's own readings and
prints, per process, the offset (record minus reading) at the start and at the end: its median, its spread, and
the difference between the two processes' medians. Offsets that are constant within a microsecond or two, and
equal across processes, mean a judge kernel reading ``%globaltimer`` can bracket each batch on the records' clock.

    python benchmarks/ledger_clock_probe.py --launches 20 --json-out ledger_clock.json
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

KERNEL = "ledger_clock_stamp"


def child(fd: int, launches: int, cache: Path, interval_s: float) -> list[list[int]]:
    """Start the ledger on ``fd``, launch the stamping kernel; returns its (start, end) readings per launch."""
    import torch
    import triton
    import triton.language as tl

    from kernel_reward.ipc.ledger_build import build
    from kernel_reward.runner.launch_ledger import LaunchLedger

    torch.zeros(1, device="cuda")
    ledger = LaunchLedger(build(cache))
    ledger.start(fd)

    @triton.jit
    def ledger_clock_stamp(out_ptr, ROUNDS: tl.constexpr):
        start = tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )
        value = start.to(tl.float32)
        for _ in range(ROUNDS):  # a few microseconds of dependent work between the readings
            value = value * 1.000001 + 1e-7
        end = tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )
        tl.store(out_ptr, start)
        tl.store(out_ptr + 1, end + (value < -1.0).to(tl.int64))  # keeps the loop

    assert ledger_clock_stamp.__name__ == KERNEL
    stamps = torch.zeros(launches, 2, dtype=torch.int64, device="cuda")
    for index in range(launches):
        ledger_clock_stamp[(1,)](stamps[index], ROUNDS=2000)
        torch.cuda.synchronize()
        time.sleep(interval_s)
    ledger.flush(1)
    return stamps.tolist()


def run_child(launches: int, cache: Path, interval_ms: float) -> tuple[list[list[int]], str]:
    read_fd, write_fd = os.pipe()
    received: list[bytes] = []

    def drain() -> None:
        while chunk := os.read(read_fd, 1 << 16):
            received.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    command = [sys.executable, __file__, "--child", "--launches", str(launches), "--cache", str(cache)]
    command += ["--interval-ms", str(interval_ms)]
    done = subprocess.run(
        command + ["--fd", str(write_fd)], pass_fds=(write_fd,), capture_output=True, text=True, check=False
    )
    os.close(write_fd)
    reader.join(timeout=60)
    os.close(read_fd)
    if done.returncode != 0:
        raise SystemExit(f"the child failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1]), b"".join(received).decode(errors="replace")


def drift_ppm(offsets_ns: list[int], readings_ns: list[int]) -> float | None:
    """Pure: the offset's change per second of the GPU's clock, first launch to last, in parts per million."""
    span = readings_ns[-1] - readings_ns[0]
    return (offsets_ns[-1] - offsets_ns[0]) / span * 1e6 if span > 0 else None


def off_the_line_ns(offsets_ns: list[int], readings_ns: list[int]) -> int | None:
    """Pure: the largest distance of an offset from the line through the first and the last (0: a steady drift,
    which two readings measure; more: steps or bends, which they do not)."""
    span = readings_ns[-1] - readings_ns[0]
    if span <= 0:
        return None
    slope = (offsets_ns[-1] - offsets_ns[0]) / span
    return max(
        round(abs(o - offsets_ns[0] - slope * (r - readings_ns[0])))
        for o, r in zip(offsets_ns, readings_ns, strict=True)
    )


def offsets(stamps: list[list[int]], text: str) -> dict:
    """Pure: the records of the stamping kernel paired in order with its own readings, as offsets (ns)."""
    from kernel_reward.ipc.ledger import parse

    records = [k for chunk in parse(text) for k in chunk.kernels if k.name == KERNEL]
    if len(records) != len(stamps):
        return {"error": f"{len(records)} records for {len(stamps)} launches"}
    starts = [r.start_ns - s[0] for r, s in zip(records, stamps, strict=True)]
    ends = [r.end_ns - s[1] for r, s in zip(records, stamps, strict=True)]
    return {
        "records": len(records),
        "start_offset_median_ns": statistics.median(starts),
        "start_offset_spread_ns": max(starts) - min(starts),
        "end_offset_median_ns": statistics.median(ends),
        "end_offset_spread_ns": max(ends) - min(ends),
        "start_offset_drift_ns": starts[-1] - starts[0],  # last launch against the first
        "start_offsets_ns": starts,  # per launch: how the drift goes over time
        "drift_ppm": drift_ppm(starts, [s[0] for s in stamps]),
        "off_the_line_ns": off_the_line_ns(starts, [s[0] for s in stamps]),
        "kernel_reading_ns": statistics.median(s[1] - s[0] for s in stamps),
        "record_duration_ns": statistics.median(r.duration_ns for r in records),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=20)
    parser.add_argument("--interval-ms", type=float, default=1.0, help="between launches (drift over time)")
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--fd", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.fd, args.launches, args.cache, args.interval_ms / 1e3)))
        return
    with tempfile.TemporaryDirectory(prefix="ledger_clock_") as cache:
        per_process = [offsets(*run_child(args.launches, Path(cache), args.interval_ms)) for _ in range(2)]
    report = {"launches": args.launches, "interval_ms": args.interval_ms, "processes": per_process}
    if all("error" not in p for p in per_process):
        report["start_offset_difference_ns"] = (
            per_process[1]["start_offset_median_ns"] - per_process[0]["start_offset_median_ns"]
        )
    print(
        f"{'process':>8} {'start off (ns)':>15} {'spread':>8} {'end off (ns)':>15} {'spread':>8} {'kernel ns':>10}"
    )
    for index, p in enumerate(per_process):
        if "error" in p:
            print(f"{index:>8} {p['error']}")
            continue
        print(
            f"{index:>8} {p['start_offset_median_ns']:>15.0f} {p['start_offset_spread_ns']:>8} {p['start_offset_drift_ns']:>8} "
            f"{p['end_offset_median_ns']:>15.0f} {p['end_offset_spread_ns']:>8} {p['kernel_reading_ns']:>10}"
        )
    if "start_offset_difference_ns" in report:
        print(f"between the processes' start offsets: {report['start_offset_difference_ns']:.0f} ns")
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
