"""Diagnostic (GPU only): why does the same torch op run slower in the runner than in the judge?

Hypotheses, each measured with the measuring process's OWN CUDA events (median of 20 calls, L2 flushed):
  memory   the op reads the judge's arena (exchange.Arena, mapped by exchange.MappedArena) instead of private
           memory;
  waiting  the judge's stream sits in a GPU-side wait (stream_gate.wait_value) while the runner works, so the two
           contexts time-slice;
  process  the runner is another process / context at all (compare its private-memory figure with the judge's).
Prints a table, writes JSON to argv[1].
"""

from __future__ import annotations

import json
import sys

import torch
import torch.multiprocessing as mp

from kernel_reward.ipc import exchange, stream_gate

SIZES = {
    "silu": [(32 * 1024 * 1024,)],
    "matvec": [(8192, 16384), (16384, 1)],
    "add": [(16 * 1024 * 1024,)] * 2,
}


def _op(name: str, args: list[torch.Tensor]) -> torch.Tensor:
    if name == "silu":
        return torch.nn.functional.silu(args[0])
    if name == "matvec":
        return torch.matmul(args[0], args[1])
    return args[0] + args[1]


def _time(name: str, args: list[torch.Tensor], flush: torch.Tensor, reps: int = 20) -> float:
    times = []
    for _ in range(reps + 3):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        _op(name, args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times = sorted(times[3:])
    return times[len(times) // 2]


def _views(buffer: torch.Tensor, shapes: list[tuple[int, ...]]) -> list[torch.Tensor]:
    out, offset = [], 0
    for shape in shapes:
        count = 1
        for s in shape:
            count *= s
        out.append(buffer[offset : offset + 4 * count].view(torch.float32).view(shape))
        offset += -(-4 * count // 256) * 256
    return out


def _switching(
    name: str,
    args: list[torch.Tensor],
    arena: exchange.MappedArena,
    flag: int,
    done: int,
    start: int,
    reps: int = 20,
) -> float:
    """The op timed by this process's events, each call queued behind the judge's flag: between two calls the
    GPU runs the judge's context (a copy into the arena), as in a timed batch."""
    pairs = []
    for i in range(reps):
        stream_gate.wait_value(arena.word_address(flag), start + i)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        _op(name, args)
        b.record()
        stream_gate.write_value(arena.word_address(done), start + i)
        pairs.append((a, b))
    torch.cuda.synchronize()
    times = sorted(a.elapsed_time(b) for a, b in pairs[3:])
    return times[len(times) // 2]


def child(conn) -> None:
    torch.cuda.init()
    flush = torch.empty(64 * 1024 * 1024, device="cuda")
    description = conn.recv()
    arena = exchange.MappedArena(description, [], torch.device("cuda"))
    while True:
        message = conn.recv()
        if message is None:
            return
        name, where, done = message
        shapes = SIZES[name]
        args = _views(arena.tensor, shapes)
        if where == "private":
            args = [a.clone() for a in args]
        if isinstance(done, dict):  # switching: the judge drives the flag
            conn.send("queued-soon")
            conn.send(_switching(name, args, arena, done["flag"], done["done"], done["start"]))
            continue
        ms = _time(name, args, flush)
        if done is not None:  # release the judge's waiting stream
            stream_gate.write_value(arena.word_address(done[0]), done[1])
            torch.cuda.synchronize()
        conn.send(ms)


def main() -> None:
    out_path = sys.argv[1] if len(sys.argv) > 1 else "runner_speed_probe.json"
    torch.cuda.init()
    arena = exchange.Arena(1 << 30, torch.device("cuda"))
    arena.tensor.view(torch.float32)[: arena.nbytes // 4 - 64].normal_()
    flush = torch.empty(64 * 1024 * 1024, device="cuda")
    ctx = mp.get_context("spawn")
    parent, child_end = ctx.Pipe()
    process = ctx.Process(target=child, args=(child_end,), daemon=True)
    process.start()
    description, _ = arena.share()
    parent.send(description)
    rows, number = [], 0
    for name, shapes in SIZES.items():
        row = {"op": name}
        judge_args = _views(arena.tensor, shapes)
        row["judge_arena"] = _time(name, judge_args, flush)
        row["judge_private"] = _time(name, [a.clone() for a in judge_args], flush)
        for where in ("arena", "private"):
            parent.send((name, where, None))
            row[f"runner_{where}"] = parent.recv()
            number += 1
            stream_gate.wait_value(arena.signal_address(arena.signal_words()[1]), number)
            marker = torch.cuda.Event()
            marker.record()
            parent.send((name, where, (arena.signal_words()[1], number)))
            row[f"runner_{where}_judge_waiting"] = parent.recv()
            stream_gate.wait_for_event(marker, __import__("time").monotonic() + 30, "release")
        flag, done = arena.signal_words()
        inputs = sum(v.numel() for v in judge_args) * 4
        staging = torch.randn(inputs // 4, device="cuda")
        for where in ("arena", "private"):
            start = number + 1
            parent.send((name, where, {"flag": flag, "done": done, "start": start}))
            assert parent.recv() == "queued-soon"
            for i in range(20):
                number = start + i
                arena.tensor[:inputs].view(torch.float32).copy_(
                    staging
                )  # the judge's context works in between
                flush.zero_()
                stream_gate.write_value(arena.signal_address(flag), number)
                stream_gate.wait_value(arena.signal_address(done), number)
                marker = torch.cuda.Event()
                marker.record()
                stream_gate.wait_for_event(marker, __import__("time").monotonic() + 30, "switching")
            row[f"runner_{where}_switching"] = parent.recv()
        rows.append(row)
        print(json.dumps(row), flush=True)
    parent.send(None)
    process.join(10)
    json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, open(out_path, "w"), indent=1)
    keys = [
        "judge_private",
        "judge_arena",
        "runner_private",
        "runner_arena",
        "runner_private_judge_waiting",
        "runner_arena_judge_waiting",
        "runner_arena_switching",
        "runner_private_switching",
    ]
    print("op       " + " | ".join(k.replace("runner_", "r_").replace("judge_", "j_") for k in keys))
    for row in rows:
        print(f"{row['op']:8s} " + " ".join(f"{row[k]:9.4f}" for k in keys))


if __name__ == "__main__":
    main()
