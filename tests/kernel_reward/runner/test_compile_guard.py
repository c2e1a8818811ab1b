"""torch.compile severed in a process (the runner's): flipping dynamo's flag back brings no compiler backend in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.kernel_reward.conftest import REPO_ROOT

PROBE = textwrap.dedent(
    """
    import torch
    from kernel_reward.runner.compile_guard import sever_torch_compile

    replaced = sever_torch_compile()
    backend_calls = []

    def backend(graph, example_inputs):
        backend_calls.append(1)
        return lambda *args: tuple(torch.zeros_like(a) for a in graph(*args))

    torch._dynamo.config.disable = False  # what a candidate tries first
    compiled = torch.compile(lambda x: torch.relu(x) + 1, backend=backend)
    x = torch.randn(8)
    same = bool(torch.equal(compiled(x), torch.relu(x) + 1))
    print(replaced, len(backend_calls), same)
    """
)


def test_a_severed_dynamo_never_calls_a_backend_even_when_re_enabled():
    # In a subprocess: severing is for good, and pytest's own process may still want torch.compile.
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    replaced, backend_calls, same = int(out[0]), int(out[1]), out[2]
    assert replaced >= 1 and backend_calls == 0 and same == "True", out
