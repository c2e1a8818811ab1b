"""The launch monitor records the forward's own launches only: a kernel the candidate launches from a thread of
its own while a forward runs is ablated all the same but neither counted nor timed as the forward's. Kernels run
under the Triton interpreter in a subprocess (TRITON_INTERPRET=1 must be set before triton is imported)."""

from __future__ import annotations

import textwrap

from tests.kernel_reward.conftest import run_interpreted_probe

PROBE = textwrap.dedent(
    """
    import json
    import threading
    import torch
    import triton
    import triton.language as tl
    from kernel_reward.runner.launches import LaunchMonitor

    @triton.jit
    def fill_kernel(out_ptr, value, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], value, tl.float32))

    @triton.jit
    def pad_kernel(out_ptr, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], 2.0, tl.float32))

    def forward_with_a_thread(monitor):
        own, padding = torch.zeros(8), torch.zeros(8)
        beside = threading.Thread(target=lambda: pad_kernel[(1,)](padding, BLOCK=8))
        with monitor.active():
            fill_kernel[(1,)](own, 1.0, BLOCK=8)
            beside.start()
            beside.join()
        return own, padding

    seen = {}
    for ablate in (False, True):
        monitor = LaunchMonitor(__name__, ablate=ablate)
        own, padding = forward_with_a_thread(monitor)
        seen[str(ablate)] = {
            "forward": sorted(launch.name for launch in monitor.candidate_launches),
            "elsewhere": sorted(launch.name for launch in monitor.elsewhere),
            "own_nan": bool(own.isnan().all()),
            "padding_nan": bool(padding.isnan().all()),
            "padding_ran": bool((padding == 2.0).all()),
        }
    print(json.dumps(seen))
    """
)


def test_a_kernel_launched_from_another_thread_is_not_the_forwards():
    seen = run_interpreted_probe(PROBE)
    observed, ablated = seen["False"], seen["True"]
    assert observed["forward"] == ["fill_kernel"], observed
    assert observed["elsewhere"] == ["pad_kernel"], observed
    assert observed["padding_ran"] and not observed["own_nan"]
    # Ablation reaches every thread's launches of the candidate's kernels: the padding thread's too.
    assert ablated["forward"] == ["fill_kernel"] and ablated["elsewhere"] == ["pad_kernel"], ablated
    assert ablated["own_nan"] and ablated["padding_nan"], ablated
