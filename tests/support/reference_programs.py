"""Small reference programs for the reference-check tests: one good, one bad per problem kind."""

from __future__ import annotations

from dataset_builder.checks import DropReason

# A complete program with a placeholder for the body of forward (indented 8 spaces) and extra module code.
TEMPLATE = '''"""Synthetic reference for the checker tests."""
import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8
DIM = 32
{module}

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x):
{body}


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM]
'''


def program(body: str, module: str = "") -> str:
    return TEMPLATE.format(body="\n".join("        " + line for line in body.splitlines()), module=module)


GOOD = program("return torch.tanh(x) * self.weight + x.sum(dim=-1, keepdim=True)")

# One program per problem kind (and a few ways to crash), checked together in one parallel batch.
BAD = {
    "crash_forward": (program("raise RuntimeError('boom in forward')"), DropReason.CRASH),
    "crash_missing_get_inputs": (GOOD.replace("def get_inputs", "def make_inputs"), DropReason.CRASH),
    "crash_syntax": (GOOD.replace("def forward(self, x):", "def forward(self, x)"), DropReason.CRASH),
    "crash_killed": (program("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"), DropReason.CRASH),
    "crash_stdin_is_empty": (program("input()\nreturn x"), DropReason.CRASH),
    "crash_noisy": (
        program("for i in range(20000):\n    print('line', i)\nraise ValueError('late')"),
        DropReason.CRASH,
    ),
    "nondeterministic": (program("return F.dropout(x, p=0.5, training=True)"), DropReason.NONDETERMINISTIC),
    "stateful": (program("self.weight.data += 1.0\nreturn x * self.weight"), DropReason.NONDETERMINISTIC),
    "input_independent": (program("return torch.zeros_like(x) + self.weight"), DropReason.INPUT_INDEPENDENT),
    "fixed_inputs": (
        GOOD.replace("return [torch.randn(BATCH, DIM)]", "return [torch.ones(BATCH, DIM)]"),
        DropReason.INPUT_INDEPENDENT,
    ),
    "near_zero": (program("return x * 1e-6"), DropReason.NEAR_CONSTANT),
    "near_constant": (program("return 1000.0 + 1e-3 * x"), DropReason.NEAR_CONSTANT),
    "no_tensor_output": (program("return float(x.sum())"), DropReason.NO_TENSOR_OUTPUT),
    "non_finite": (program("return torch.log(x)"), DropReason.NON_FINITE),
    # outputs the reward cannot compare (it takes a tensor or a flat tuple / list of tensors)
    "dict_output": (program("return {'y': torch.tanh(x)}"), DropReason.UNSUPPORTED_OUTPUT),
    "nested_output": (program("return (torch.tanh(x), (x * 2, x * 3))"), DropReason.UNSUPPORTED_OUTPUT),
}

# A child needs ~2 s to start and import torch on an idle 2-core box; leave room for a loaded one.
TIMEOUT_S = 20.0
HANG_TIMEOUT_S = 4.0
