"""Diagnostic (GPU only): can a judge time a runner's GPU work on its OWN CUDA events, across processes?

The judge (this process) and a runner (a spawned child with its own CUDA context) share one arena. A batch:

    runner stream:  wait(flag >= n) -> K calls on arena inputs -> write(done = n)           [enqueued first]
    judge stream:   wait(host_gate >= n) -> E0 -> copy inputs in -> flush L2 -> write(flag = n)
                    -> wait(done >= n) -> copy outputs out -> E1                            [then the host opens the gate]

E0..E1 is on the judge's GPU timeline; the runner's host latency is outside it (everything is queued before the
gate opens). The reference side runs the same op in the judge's own stream between the flush and the capture.

Measured per task: each side's empty-batch cost (median, spread), per-call times from (batch - empty) / K against
the in-process CUDA-event truth, the self-speedup over interleaved batches, and two attacks: a runner that writes
``done`` before its calls, and one that ignores the flag. Prints a table, writes JSON to argv[1].
"""

from __future__ import annotations

import ctypes
import json
import sys
import time

import numpy as np
import torch
import torch.multiprocessing as mp

CU = None


def _cuda() -> ctypes.CDLL:
    global CU
    if CU is None:
        CU = ctypes.CDLL("libcuda.so.1")
    return CU


def _check(code: int, what: str) -> None:
    if code != 0:
        raise RuntimeError(f"{what} failed: CUresult {code}")


def wait_value(stream: int, ptr: int, value: int) -> None:
    _check(_cuda().cuStreamWaitValue32_v2(ctypes.c_void_p(stream), ctypes.c_uint64(ptr), ctypes.c_uint32(value),
                                          ctypes.c_uint(0)), "cuStreamWaitValue32")


def write_value(stream: int, ptr: int, value: int) -> None:
    _check(_cuda().cuStreamWriteValue32_v2(ctypes.c_void_p(stream), ctypes.c_uint64(ptr), ctypes.c_uint32(value),
                                           ctypes.c_uint(0)), "cuStreamWriteValue32")


class HostWord:
    """A pinned, device-mapped host word the GPU can wait on."""

    def __init__(self) -> None:
        host = ctypes.c_void_p()
        _check(_cuda().cuMemHostAlloc(ctypes.byref(host), ctypes.c_size_t(4096), ctypes.c_uint(3)), "cuMemHostAlloc")
        self.word = ctypes.c_int32.from_address(host.value)
        self.word.value = 0
        out = ctypes.c_uint64()
        _check(_cuda().cuMemHostGetDevicePointer_v2(ctypes.byref(out), host, 0), "cuMemHostGetDevicePointer")
        self.address = out.value


TASKS = {  # name: (input shapes, op, calls per batch)
    "add_relu_4M": ([(4194304,), (4194304,)], "add_relu", 8),
    "add_relu_64K": ([(65536,), (65536,)], "add_relu", 64),
    "softmax_4096x1024": ([(4096, 1024)], "softmax", 16),
    "matmul_1024": ([(1024, 1024), (1024, 1024)], "matmul", 16),
    "matmul_4096": ([(4096, 4096), (4096, 4096)], "matmul", 4),
}


def run_op(op: str, args: list[torch.Tensor], out: torch.Tensor) -> None:
    if op == "add_relu":
        torch.add(args[0], args[1], out=out)
        out.relu_()
    elif op == "softmax":
        out.copy_(torch.softmax(args[0], dim=-1))
    else:
        torch.matmul(args[0], args[1], out=out)


def out_shape(op: str, shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    return (shapes[0][0], shapes[1][1]) if op == "matmul" else shapes[0]


def runner_main(conn) -> None:
    torch.cuda.init()
    stream = torch.cuda.current_stream().cuda_stream
    state = {}
    while True:
        msg = conn.recv()
        if msg[0] == "bye":
            return
        if msg[0] == "setup":
            _, arena, flags, op, in_shapes, calls = msg
            n_in = sum(int(np.prod(s)) for s in in_shapes)
            o_shape = out_shape(op, in_shapes)
            n_out = int(np.prod(o_shape))
            ins = [[] for _ in range(calls)]
            outs = []
            for c in range(calls):
                base = c * n_in
                for s in in_shapes:
                    size = int(np.prod(s))
                    ins[c].append(arena[base:base + size].view(s))
                    base += size
            out_base = calls * n_in
            for c in range(calls):
                outs.append(arena[out_base + c * n_out: out_base + (c + 1) * n_out].view(o_shape))
            state = {"flags": flags, "op": op, "ins": ins, "outs": outs}
            conn.send("ok")
        elif msg[0] == "batch":
            _, n, calls, mode = msg
            flag_ptr, done_ptr = state["flags"].data_ptr(), state["flags"].data_ptr() + 4
            with torch.no_grad():
                if mode != "no_wait":
                    wait_value(stream, flag_ptr, n)
                if mode == "early_done":
                    write_value(stream, done_ptr, n)
                for c in range(calls):
                    run_op(state["op"], state["ins"][c], state["outs"][c])
                if mode != "early_done":
                    write_value(stream, done_ptr, n)
            conn.send("queued")


class Judge:
    def __init__(self, conn, task: str, flush_mb: int = 100) -> None:
        self.conn = conn
        in_shapes, self.op, self.calls = TASKS[task]
        self.in_shapes = in_shapes
        self.n_in = sum(int(np.prod(s)) for s in in_shapes)
        self.o_shape = out_shape(self.op, in_shapes)
        self.n_out = int(np.prod(self.o_shape))
        total = self.calls * (self.n_in + self.n_out)
        self.arena = torch.empty(total, device="cuda")
        self.flags = torch.zeros(2, dtype=torch.int32, device="cuda")
        self.mirror = torch.empty(total, device="cuda")
        self.staged = torch.empty(self.calls * self.n_in, device="cuda")
        self.capture = torch.empty(self.calls * self.n_out, device="cuda")
        self.flush = torch.empty(flush_mb * (1 << 20) // 4, device="cuda")
        torch.cuda.synchronize()
        self.gate = HostWord()
        self.gate_ptr = self.gate.address
        self.stream = torch.cuda.current_stream().cuda_stream
        self.n = 0
        conn.send(("setup", self.arena, self.flags, self.op, in_shapes, self.calls))
        assert conn.recv() == "ok"
        self.mirror_in, self.mirror_out = self._views(self.mirror)

    def _views(self, buf):
        ins, outs = [], []
        for c in range(self.calls):
            base = c * self.n_in
            row = []
            for s in self.in_shapes:
                size = int(np.prod(s))
                row.append(buf[base:base + size].view(s))
                base += size
            ins.append(row)
        out_base = self.calls * self.n_in
        for c in range(self.calls):
            outs.append(buf[out_base + c * self.n_out: out_base + (c + 1) * self.n_out].view(self.o_shape))
        return ins, outs

    def stage(self) -> None:
        self.staged.normal_()

    def batch(self, side: str, calls: int, mode: str = "honest") -> tuple[float, torch.Tensor]:
        """(GPU ms E0..E1, captured outputs) of one batch of ``calls`` calls (0: empty)."""
        self.n += 1
        n = self.n
        buf = self.arena if side == "candidate" else self.mirror
        buf[self.calls * self.n_in:].fill_(float("nan"))  # poison the outputs
        torch.cuda.synchronize()
        if side == "candidate":
            self.conn.send(("batch", n, calls, mode))
            assert self.conn.recv() == "queued"
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.no_grad():
            wait_value(self.stream, self.gate_ptr, n)
            e0.record()
            buf[: self.calls * self.n_in].copy_(self.staged)
            self.flush.zero_()
            if side == "candidate":
                write_value(self.stream, self.flags.data_ptr(), n)
                wait_value(self.stream, self.flags.data_ptr() + 4, n)
            else:
                for c in range(calls):
                    run_op(self.op, self.mirror_in[c], self.mirror_out[c])
            self.capture.copy_(buf[self.calls * self.n_in:])
            e1.record()
        self.gate.word.value = n  # open the gate: everything above was queued behind it
        deadline = time.monotonic() + 10
        while not e1.query():
            if time.monotonic() > deadline:
                raise RuntimeError("batch did not finish in 10 s")
        return e0.elapsed_time(e1), self.capture.clone()

    def truth(self, reps: int = 50) -> float:
        """Median single-call CUDA-event time in this process, L2 flushed before each call (the old method)."""
        times = []
        for _ in range(reps):
            self.flush.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            run_op(self.op, self.mirror_in[0], self.mirror_out[0])
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        return float(np.median(times))


def measure(conn, task: str, batches: int = 40) -> dict:
    judge = Judge(conn, task)
    K = judge.calls
    judge.stage()
    for side in ("reference", "candidate"):  # warm-up
        for _ in range(3):
            judge.batch(side, K)
            judge.batch(side, 0)
    empty = {side: [judge.batch(side, 0)[0] for _ in range(15)] for side in ("reference", "candidate")}
    empty_med = {side: float(np.median(v)) for side, v in empty.items()}
    ref_ms, cand_ms, wrong = [], [], 0
    for b in range(batches):
        judge.stage()
        order = ("reference", "candidate") if b % 2 == 0 else ("candidate", "reference")
        got = {}
        for side in order:
            got[side] = judge.batch(side, K)
        if not torch.allclose(got["reference"][1], got["candidate"][1], atol=1e-4, rtol=1e-4, equal_nan=False):
            wrong += 1
        ref_ms.append((got["reference"][0] - empty_med["reference"]) / K)
        cand_ms.append((got["candidate"][0] - empty_med["candidate"]) / K)
    ratios = np.array(ref_ms) / np.array(cand_ms)
    attacks = {}
    for mode in ("early_done", "no_wait"):
        times, bad = [], 0
        for _ in range(10):
            judge.stage()
            ref_t, ref_out = judge.batch("reference", K)
            t, out = judge.batch("candidate", K, mode)
            times.append((t - empty_med["candidate"]) / K)
            if not torch.allclose(ref_out, out, atol=1e-4, rtol=1e-4):
                bad += 1
        attacks[mode] = {"per_call_ms": float(np.median(times)), "wrong_batches_of_10": bad}
    truth = judge.truth()
    return {
        "task": task, "calls_per_batch": K, "truth_ms": truth,
        "empty_ms": {s: {"median": empty_med[s], "min": float(np.min(v)), "max": float(np.max(v))} for s, v in empty.items()},
        "ref_ms": float(np.median(ref_ms)), "cand_ms": float(np.median(cand_ms)),
        "self_speedup": float(np.median(ratios)), "abs_log_p95_batches": float(np.percentile(np.abs(np.log(ratios)), 95)),
        "cand_cv": float(np.std(cand_ms) / np.mean(cand_ms)), "wrong_honest_batches": wrong, "attacks": attacks,
    }


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "gate_diag.json"
    cu = _cuda()
    _check(cu.cuInit(0), "cuInit")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=runner_main, args=(child,), daemon=True)
    proc.start()
    torch.cuda.init()
    rows = []
    try:
        for task in TASKS:
            t0 = time.time()
            try:
                row = measure(parent, task)
            except Exception as exc:  # a diagnostic: report and go on to the next task
                row = {"task": task, "error": repr(exc)}
            row["wall_s"] = time.time() - t0
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        parent.send(("bye",))
        proc.join(5)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, open(out_path, "w"), indent=1)
    print(f"{'task':20s} {'K':>3s} {'truth':>8s} {'ref':>8s} {'cand':>8s} {'self':>6s} {'p95log':>7s} {'cv':>6s} "
          f"{'emptyR':>7s} {'emptyC':>7s} {'early':>11s} {'nowait':>11s}")
    for r in rows:
        if "error" in r:
            print(f"{r['task']:20s} ERROR {r['error'][:100]}")
            continue
        a = r["attacks"]
        print(f"{r['task']:20s} {r['calls_per_batch']:3d} {r['truth_ms']:8.4f} {r['ref_ms']:8.4f} {r['cand_ms']:8.4f} "
              f"{r['self_speedup']:6.3f} {r['abs_log_p95_batches']:7.4f} {r['cand_cv']:6.3f} "
              f"{r['empty_ms']['reference']['median']:7.3f} {r['empty_ms']['candidate']['median']:7.3f} "
              f"{a['early_done']['per_call_ms']:.4f}/{a['early_done']['wrong_batches_of_10']:<2d} "
              f"{a['no_wait']['per_call_ms']:.4f}/{a['no_wait']['wrong_batches_of_10']:<2d}")


if __name__ == "__main__":
    main()
