"""The two program templates a task is rendered into: the reference (shipped-task format) and a ``ModelNew``.

A family fills a ``Program`` (the parts both programs share) and supplies the reference's forward lines and
the candidate's kernel and host code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_REFERENCE = '''"""{doc}"""

import torch
import torch.nn as nn
import torch.nn.functional as F

{constants}


class Model(nn.Module):
    def __init__(self{init_params}):
        super().__init__(){init_body}

    def forward(self, {args}):
{forward}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init_inputs}]
'''

_CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
{kernel}


class ModelNew(nn.Module):
    def __init__(self{init_params}):
        super().__init__(){init_body}

    def forward(self, {args}):
{forward}
"""


def _indent(lines: Iterable[str], spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in lines)


def _init_body(lines: Sequence[str]) -> str:
    """Lines after ``super().__init__()`` (nothing at all when there are none)."""
    return "".join("\n" + " " * 8 + line for line in lines)


def _constants(sizes: dict[str, int]) -> str:
    return "\n".join(f"{name} = {value}" for name, value in sizes.items())


def size_args(sizes: dict[str, int]) -> str:
    return ", ".join(sizes)


@dataclass(frozen=True)
class Program:
    """The parts both programs of a task share."""

    doc: str
    sizes: dict[str, int]
    init_params: str  # e.g. ", dim: int, eps: float" ("" for none)
    init_inputs: str  # e.g. "DIM, 1e-05"
    ref_init: tuple[str, ...]  # Model.__init__ body lines after super().__init__()
    new_init: tuple[str, ...]  # ModelNew.__init__ body lines
    args: str  # "x" or "x, y"
    inputs: str  # get_inputs() list items


def reference_program(p: Program, forward: Sequence[str]) -> str:
    return _REFERENCE.format(
        doc=p.doc,
        constants=_constants(p.sizes),
        init_params=p.init_params,
        init_body=_init_body(p.ref_init),
        args=p.args,
        forward=_indent(forward, 8),
        inputs=p.inputs,
        init_inputs=p.init_inputs,
    )


def candidate_program(p: Program, kernel: str, forward: str) -> str:
    return _CANDIDATE.format(
        kernel=kernel.strip("\n"),
        init_params=p.init_params,
        init_body=_init_body(p.new_init),
        args=p.args,
        forward=forward.rstrip("\n"),
    )


def fmt(value: float) -> str:
    return repr(float(value))
