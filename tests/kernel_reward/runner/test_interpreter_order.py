"""The interpreter run as a GPU may run a launch: programs out of order, plain stores seen by other programs only
at an atomic or at the end of the launch, a program's own stores seen at once. Kernels run in a subprocess
(TRITON_INTERPRET=1 must be set before triton is imported)."""

from __future__ import annotations

import textwrap

from tests.kernel_reward.conftest import run_interpreted_probe

PROBE = textwrap.dedent(
    """
    import json
    import random
    import torch
    import triton
    import triton.language as tl
    from kernel_reward.runner.interpreter_order import install_interpreter_order

    install_interpreter_order(random.Random(7))

    @triton.jit
    def record_order(order_ptr, counter_ptr):
        ticket = tl.atomic_add(counter_ptr, 1)
        tl.store(order_ptr + ticket, tl.program_id(0))

    @triton.jit
    def unsynchronised_sum(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr, tl.load(out_ptr) + tl.sum(tl.load(x_ptr + offs), axis=0))

    @triton.jit
    def locked_sum(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        part = tl.sum(tl.load(x_ptr + offs), axis=0)
        while tl.atomic_cas(lock_ptr, 0, 1) == 1:
            pass
        tl.store(out_ptr, tl.load(out_ptr) + part)
        tl.atomic_xchg(lock_ptr, 0)

    @triton.jit
    def own_scratch(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2.0)
        reread = tl.load(out_ptr + offs)  # its own store, read back in the same program
        tl.store(out_ptr + offs, reread + 1.0)

    grid = 16
    order = torch.full((grid,), -1, dtype=torch.int32)
    record_order[(grid,)](order, torch.zeros(1, dtype=torch.int32))
    x = torch.arange(grid * 8, dtype=torch.float32)
    racy = torch.zeros(1)
    unsynchronised_sum[(grid,)](x, racy, BLOCK=8)
    locked = torch.zeros(1)
    locked_sum[(grid,)](x, locked, torch.zeros(1, dtype=torch.int32), BLOCK=8)
    scratch = torch.empty_like(x)
    own_scratch[(grid,)](x, scratch, BLOCK=8)
    print(json.dumps({
        "order": order.tolist(),
        "racy": racy.item(),
        "locked": locked.item(),
        "total": x.sum().item(),
        "scratch_ok": bool(torch.equal(scratch, x * 2 + 1)),
    }))
    """
)


def test_programs_run_out_of_order_and_see_other_programs_stores_only_through_atomics():
    seen = run_interpreted_probe(PROBE)
    assert sorted(seen["order"]) == list(range(16)) and seen["order"] != list(range(16)), seen["order"]
    assert seen["locked"] == seen["total"]  # the lock's atomics publish each program's stores
    assert seen["racy"] != seen["total"]  # every program read the total as it was before the launch
    assert seen["scratch_ok"]  # a program reads its own held-back stores
