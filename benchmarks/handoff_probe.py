"""Diagnostic (GPU only): what does handing a batch from the judge's CUDA context to a runner's and back cost?

The judge (this process) times, with its own events, the span from "inputs are in" to "the runner is done", for a
runner (a spawned child) that runs nothing (dry) or one op, under two hand-over mechanisms:
  gpu   both streams wait on arena words (stream_gate.wait_value): the judge's stream blocks on ``done``;
  host  the words live in pinned host memory both processes map; the runner's HOST waits for ``flag`` and then
        launches, its stream writes ``done`` to host memory, and the judge's host waits for it before queuing
        its capture. No GPU stream ever blocks.
Prints a table (median and 90th percentile of 40 batches, ms), writes JSON to argv[1].
On the H200 it fails before measuring: the child's mmap of the shared page raises PermissionError
(undiagnosed).
"""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import sys
import time

import numpy as np
import torch
import torch.multiprocessing as mp

from kernel_reward.ipc import exchange, stream_gate

N = 32 * 1024 * 1024


class SharedWords:
    """Two 32-bit words in a shared, pinned, device-mapped host page (flag, done)."""

    def __init__(self, fd: int) -> None:
        self.map = mmap.mmap(fd, 4096)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        lib = ctypes.CDLL("libcuda.so.1")
        code = lib.cuMemHostRegister_v2(
            ctypes.c_void_p(base), ctypes.c_size_t(4096), ctypes.c_uint(0x01 | 0x02)
        )
        if code != 0:
            raise RuntimeError(f"cuMemHostRegister failed: {code}")
        pointer = ctypes.c_uint64()
        code = lib.cuMemHostGetDevicePointer_v2(
            ctypes.byref(pointer), ctypes.c_void_p(base), ctypes.c_uint(0)
        )
        if code != 0:
            raise RuntimeError(f"cuMemHostGetDevicePointer failed: {code}")
        self.device = pointer.value
        self.flag = ctypes.c_int32.from_address(base)
        self.done = ctypes.c_int32.from_address(base + 4)


def spin(word: ctypes.c_int32, value: int, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while word.value < value:
        if time.monotonic() > deadline:
            raise TimeoutError("spin")


def child(conn, fd: int) -> None:
    torch.cuda.init()
    torch.empty(1, device="cuda")
    words = SharedWords(fd)
    arena = exchange.MappedArena(conn.recv(), [], torch.device("cuda"))
    x = arena.tensor[: 4 * N].view(torch.float32)
    out = torch.empty(N, device="cuda")
    flag_word, done_word = conn.recv()
    while True:
        message = conn.recv()
        if message is None:
            return
        mechanism, work, number = message
        if mechanism == "gpu":
            stream_gate.wait_value(arena.word_address(flag_word), number)
            if work:
                out.copy_(torch.nn.functional.silu(x))
            stream_gate.write_value(arena.word_address(done_word), number)
            conn.send("queued")
        else:
            conn.send("waiting")
            spin(words.flag, number)
            if work:
                out.copy_(torch.nn.functional.silu(x))
            stream_gate.write_value(words.device + 4, number)


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "handoff_probe.json"
    torch.cuda.init()
    torch.empty(1, device="cuda")  # a current context for the driver calls (without it: CUresult 201)
    fd = os.memfd_create("words")
    os.ftruncate(fd, 4096)
    words = SharedWords(fd)
    arena = exchange.Arena(4 * N + 4096, torch.device("cuda"))
    arena.tensor[: 4 * N].view(torch.float32).normal_()
    staging = torch.randn(N, device="cuda")
    flush = torch.empty(64 * 1024 * 1024, device="cuda")
    ctx = mp.get_context("spawn")
    parent, child_end = ctx.Pipe()
    process = ctx.Process(target=child, args=(child_end, fd), daemon=True)
    process.start()
    parent.send(arena.share()[0])
    flag_word, done_word = arena.signal_words()
    parent.send((flag_word, done_word))
    number, rows = 0, []
    for mechanism in ("gpu", "host", "gpu", "host"):
        for work in (False, True):
            spans = []
            for _ in range(40):
                number += 1
                e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                parent.send((mechanism, work, number))
                assert parent.recv() == ("queued" if mechanism == "gpu" else "waiting")
                e0.record()
                arena.tensor[: 4 * N].view(torch.float32).copy_(staging)
                flush.zero_()
                e1.record()
                if mechanism == "gpu":  # the judge's stream waits for the runner's word on the GPU
                    stream_gate.write_value(arena.signal_address(flag_word), number)
                    stream_gate.wait_value(arena.signal_address(done_word), number)
                else:  # the judge's host waits for the word in shared host memory
                    stream_gate.write_value(words.device, number)
                    spin(words.done, number)
                e2.record()
                stream_gate.wait_for_event(e2, time.monotonic() + 10, f"{mechanism} handoff")
                spans.append(e1.elapsed_time(e2))
            row = {
                "mechanism": mechanism,
                "work": work,
                "median_ms": float(np.median(spans[5:])),
                "p10_ms": float(np.percentile(spans[5:], 10)),
                "p90_ms": float(np.percentile(spans[5:], 90)),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    parent.send(None)
    process.join(5)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(out_path, "w"), indent=1)
    print(f"{'mechanism':10s} {'work':6s} {'p10':>8s} {'median':>8s} {'p90':>8s}")
    for r in rows:
        print(
            f"{r['mechanism']:10s} {str(r['work']):6s} {r['p10_ms']:8.4f} {r['median_ms']:8.4f} {r['p90_ms']:8.4f}"
        )


if __name__ == "__main__":
    main()
