"""The compile pass's monitor (``LaunchMonitor(compile_only=True)``): the candidate's kernels, plain and autotuned,
are compiled for their arguments and never run, nothing is recorded, and an autotuner's choice is left for the
device to make later (no benchmark of kernels that did not run is cached). Kernels of other modules run as usual.
Under the Triton interpreter in a subprocess (TRITON_INTERPRET=1 must be set before triton is imported)."""

from __future__ import annotations

import textwrap

from tests.kernel_reward.conftest import run_interpreted_probe

PROBE = textwrap.dedent(
    """
    import json
    import torch
    import triton
    import triton.language as tl
    from kernel_reward.runner.interpreter_shims import install_interpreter_shims
    from kernel_reward.runner.launches import LaunchMonitor

    install_interpreter_shims()  # as the runner has them (the autotuner's benchmark needs a driver)

    @triton.jit
    def fill_kernel(out_ptr, value, BLOCK: tl.constexpr):
        tl.store(out_ptr + tl.arange(0, BLOCK), tl.full([BLOCK], value, tl.float32))

    @triton.autotune(configs=[triton.Config({"BLOCK": 8}), triton.Config({"BLOCK": 16})], key=["n"])
    @triton.jit
    def tuned_kernel(out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.full([BLOCK], 3.0, tl.float32), mask=offsets < n)

    def forward(monitor):
        plain, tuned = torch.zeros(8), torch.zeros(8)
        with monitor.active():
            fill_kernel[(1,)](plain, 1.0, BLOCK=8)
            tuned_kernel[(1,)](tuned, 8)
        return plain, tuned

    seen = {}
    for mode in ("compile_only", "other_module", "launch"):
        monitor = LaunchMonitor(
            "not_this_module" if mode == "other_module" else __name__, compile_only=mode != "launch"
        )
        plain, tuned = forward(monitor)
        seen[mode] = {
            "plain_ran": bool((plain == 1.0).all()),
            "tuned_ran": bool((tuned == 3.0).all()),
            "launches": sorted(launch.name for launch in monitor.launches),
            "tuner_choices": len(tuned_kernel.cache),
        }
        tuned_kernel.cache.clear()
    print(json.dumps(seen))
    """
)


def test_compile_only_runs_none_of_the_candidates_kernels_and_records_nothing():
    seen = run_interpreted_probe(PROBE)
    compiled = seen["compile_only"]
    assert not compiled["plain_ran"] and not compiled["tuned_ran"], compiled
    assert compiled["launches"] == [] and compiled["tuner_choices"] == 0, compiled
    # another module's kernels are not the candidate's: they run and are recorded as before
    other = seen["other_module"]
    assert other["plain_ran"] and other["tuned_ran"] and other["launches"] == ["fill_kernel", "tuned_kernel"]
    assert seen["launch"]["plain_ran"] and seen["launch"]["tuned_ran"]
    assert seen["launch"]["tuner_choices"] == 1  # the autotuner chose when the kernels ran
