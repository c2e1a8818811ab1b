"""Synthetic kernel tasks with known answers, for cold-start SFT data (issue 13, section 1).

Each generated task is a reference program in exactly the shipped-task format (module docstring, UPPER_CASE
size constants, ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``), at sizes where one
Triton-interpreter evaluation takes about a second, together with

- ``solution``: an honest ``ModelNew`` whose Triton kernel does all of the work (masked, size-generic: the
  reward's resized-input check scales the size constants);
- ``flawed``: a plausible first answer with one realistic bug (a padded lane left unmasked, a divisor that
  counts the padding, a forgotten op or parameter), so multi-turn data can show a real correction;
- ``flaw``: one sentence saying what that bug is, for the corrected turn.

Nothing here is trusted: ``dataset_builder.sft_data`` keeps a task only after ``kernel_reward`` judged the
solution ``correct`` and the flawed answer not.

Families and their variants (the variant is the split key, see ``split_tasks``):

- ``elementwise``: a chain of 2-3 pointwise ops with parameters; variant ``unary`` (one input) or ``binary``
  (one op also reads a second input ``y``).
- ``reduction``: sum / mean / amax over the last dim, with an optional pre-op (abs, square) and scale;
  variant = the reduction.
- ``norm``: ``layer_norm`` (with or without affine) or ``rms_norm`` (with or without weight) over the last dim.
- ``softmax``: ``softmax`` (with a temperature) or ``log_softmax`` over the last dim.

Row sizes are never powers of two, so the block is always padded and masking bugs always show.
Everything is a pure function of ``(family, seed)``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

Family = Literal["elementwise", "reduction", "norm", "softmax"]
FAMILIES: tuple[str, ...] = ("elementwise", "reduction", "norm", "softmax")
VARIANTS: dict[str, tuple[str, ...]] = {
    "elementwise": ("unary", "binary"),
    "reduction": ("sum", "mean", "amax"),
    "norm": ("layer_norm", "rms_norm"),
    "softmax": ("softmax", "log_softmax"),
}
# Held out by default: one variant of each row family (about 30 % of tasks), each a different computation from
# every training variant of its family (not a re-parameterisation of one), so held-out tasks are not
# near-duplicates of training tasks. Elementwise chains all train: their variants share single ops.
DEFAULT_HELD_OUT: tuple[str, ...] = ("reduction/amax", "norm/rms_norm", "softmax/log_softmax")

ROW_SIZES = (48, 80, 96, 160, 192, 320)  # never a power of two: the block is padded, masks matter
ELEMENTWISE_DIMS = (96, 160, 192, 320)


@dataclass(frozen=True)
class SyntheticTask:
    """One generated task and its two answers (programs, not completions).

    Attributes:
        uuid: ``synthetic_<family>_<hash of the reference>``; equal references get equal uuids.
        family, variant: what was generated; ``key`` (``family/variant``) is the split unit.
        level: ``"1"`` for a single op, ``"2"`` for a fused chain (as ``extra_info.level``).
        ops: the torch ops the reference uses.
        reference: the reference program (shipped-task format, small sizes).
        solution: the honest ``ModelNew`` program.
        flawed: the buggy ``ModelNew`` program.
        plan: one sentence describing the kernel, opening both first answers.
        flaw: one sentence naming the bug of ``flawed`` and its fix, opening the corrected answer.
        seed: the seed it was generated from.
    """

    uuid: str
    family: str
    variant: str
    level: str
    ops: tuple[str, ...]
    reference: str
    solution: str
    flawed: str
    plan: str
    flaw: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.family}/{self.variant}"

    def as_task(self):
        """The reference as a ``dataset_builder.tasks.Task`` (so the dataset builder can use it as a row)."""
        from dataset_builder.tasks import Task

        return Task(name=self.uuid, category=self.family, level=self.level, ops=self.ops,
                    source=self.reference, preset="small")


@dataclass(frozen=True)
class Split:
    """Tasks split by ``family/variant`` key: no key is on both sides."""

    train: list[SyntheticTask]
    held_out: list[SyntheticTask]


# ------------------------------------------------------------------------------------------------- programs

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

_CANDIDATE = '''import torch
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
'''

_ROW_HOST = """        n_cols = x.shape[-1]
        x2 = x.reshape(-1, n_cols).contiguous()
        rows = x2.shape[0]
"""


def _indent(lines: Iterable[str], spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in lines)


def _init_body(lines: Sequence[str]) -> str:
    """Lines after ``super().__init__()`` (nothing at all when there are none)."""
    return "".join("\n" + " " * 8 + line for line in lines)


def _constants(sizes: dict[str, int]) -> str:
    return "\n".join(f"{name} = {value}" for name, value in sizes.items())


def _shape(sizes: dict[str, int]) -> str:
    return ", ".join(sizes)


@dataclass(frozen=True)
class _Program:
    """The parts both programs of a task share."""

    doc: str
    sizes: dict[str, int]
    init_params: str  # e.g. ", dim: int, eps: float" ("" for none)
    init_inputs: str  # e.g. "DIM, 1e-05"
    ref_init: tuple[str, ...]  # Model.__init__ body lines after super().__init__()
    new_init: tuple[str, ...]  # ModelNew.__init__ body lines
    args: str  # "x" or "x, y"
    inputs: str  # get_inputs() list items


def _reference(p: _Program, forward: Sequence[str]) -> str:
    return _REFERENCE.format(doc=p.doc, constants=_constants(p.sizes), init_params=p.init_params,
                             init_body=_init_body(p.ref_init), args=p.args,
                             forward=_indent(forward, 8), inputs=p.inputs, init_inputs=p.init_inputs)


def _candidate(p: _Program, kernel: str, forward: str) -> str:
    return _CANDIDATE.format(kernel=kernel.strip("\n"), init_params=p.init_params,
                             init_body=_init_body(p.new_init), args=p.args,
                             forward=forward.rstrip("\n"))


def _fmt(value: float) -> str:
    return repr(float(value))


def _row_sizes(rng: random.Random) -> dict[str, int]:
    dim = rng.choice(ROW_SIZES)
    if rng.random() < 0.5:
        return {"BATCH": rng.choice((8, 12, 16, 24)), "DIM": dim}
    return {"BATCH": rng.choice((2, 3, 4)), "SEQ": rng.choice((4, 6, 8)), "DIM": dim}


# ----------------------------------------------------------------------------------------------- elementwise


@dataclass(frozen=True)
class _Pointwise:
    name: str
    torch: str  # uses {v} (the running tensor) and, for binary ops, y
    triton: str  # uses {v} and, for binary ops, yv
    torch_op: str
    params: tuple[tuple[float, ...], ...] = ()  # candidate values per parameter {p0}, {p1}
    binary: bool = False
    nonneg_out: bool = False  # never negative output
    identity_on_nonneg: bool = False  # leaves non-negative input unchanged (forgetting it after one is no bug)


_POINTWISE = (
    _Pointwise("relu", "torch.relu({v})", "tl.maximum({v}, 0.0)", "torch.relu", nonneg_out=True,
               identity_on_nonneg=True),
    _Pointwise("leaky_relu", "F.leaky_relu({v}, {p0})", "tl.where({v} > 0, {v}, {v} * {p0})",
               "torch.nn.functional.leaky_relu", ((0.01, 0.05, 0.1, 0.2),), identity_on_nonneg=True),
    _Pointwise("sigmoid", "torch.sigmoid({v})", "1.0 / (1.0 + tl.exp(-{v}))", "torch.sigmoid", nonneg_out=True),
    _Pointwise("tanh", "torch.tanh({v})", "2.0 / (1.0 + tl.exp(-2.0 * {v})) - 1.0", "torch.tanh"),
    _Pointwise("silu", "F.silu({v})", "{v} / (1.0 + tl.exp(-{v}))", "torch.nn.functional.silu"),
    _Pointwise("softplus", "F.softplus({v})", "tl.where({v} > 20.0, {v}, tl.log(1.0 + tl.exp({v})))",
               "torch.nn.functional.softplus", nonneg_out=True),
    _Pointwise("scale", "{v} * {p0}", "{v} * {p0}", "torch.mul", ((0.5, 1.5, 2.0, -1.25, 3.0),)),
    _Pointwise("shift", "{v} + {p0}", "{v} + {p0}", "torch.add", ((0.25, -0.5, 1.0, -0.125),)),
    _Pointwise("clamp", "torch.clamp({v}, {p0}, {p1})", "tl.minimum(tl.maximum({v}, {p0}), {p1})", "torch.clamp",
               ((-1.0, -0.5, -2.0), (0.5, 1.0, 1.5))),
    _Pointwise("abs", "torch.abs({v})", "tl.abs({v})", "torch.abs", nonneg_out=True, identity_on_nonneg=True),
    _Pointwise("square", "{v} * {v}", "{v} * {v}", "torch.mul", nonneg_out=True),
    _Pointwise("add_y", "{v} + y", "{v} + yv", "torch.add", binary=True),
    _Pointwise("mul_y", "{v} * y", "{v} * yv", "torch.mul", binary=True),
    _Pointwise("max_y", "torch.maximum({v}, y)", "tl.maximum({v}, yv)", "torch.maximum", binary=True),
)


def _elementwise(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["elementwise"])
    unary = [op for op in _POINTWISE if not op.binary]
    length = rng.choice((2, 3))
    chain: list[_Pointwise] = []
    while len(chain) < length:
        op = rng.choice(unary)
        if not chain or op.name != chain[-1].name:
            chain.append(op)
    if variant == "binary":
        chain.insert(rng.randrange(len(chain) + 1), rng.choice([op for op in _POINTWISE if op.binary]))
    params = [tuple(_fmt(rng.choice(values)) for values in op.params) for op in chain]

    def step(template: str, op_params: tuple[str, ...], v: str) -> str:
        return template.format(v=v, **{f"p{i}": p for i, p in enumerate(op_params)})

    forward = [f"x = {step(op.torch, ps, 'x')}" for op, ps in zip(chain, params, strict=True)] + ["return x"]
    sizes = {"BATCH": rng.choice((8, 16, 32)), "DIM": rng.choice(ELEMENTWISE_DIMS)}
    binary = variant == "binary"
    program = _Program(
        doc="Fused pointwise chain: y = " + " -> ".join(op.name for op in chain) + ".",
        sizes=sizes, init_params="", init_inputs="", ref_init=(), new_init=(),
        args="x, y" if binary else "x",
        inputs=", ".join([f"torch.randn({_shape(sizes)})"] * (2 if binary else 1)),
    )
    block = 1024

    def kernel(ops: Sequence[tuple[_Pointwise, tuple[str, ...]]]) -> str:
        body = [f"v = {step(op.triton, ps, 'v')}" for op, ps in ops]
        return "\n".join([
            f"def chain_kernel(x_ptr, {'y_ptr, ' if binary else ''}out_ptr, n, BLOCK: tl.constexpr):",
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
            "    mask = offs < n",
            "    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)",
            *(["    yv = tl.load(y_ptr + offs, mask=mask).to(tl.float32)"] if binary else []),
            *("    " + line for line in body),
            "    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)",
        ])

    host = "\n".join([
        "        x = x.contiguous()",
        *(["        y = y.contiguous()"] if binary else []),
        "        out = torch.empty_like(x)",
        "        n = x.numel()",
        f"        chain_kernel[(triton.cdiv(n, {block}),)](x, {'y, ' if binary else ''}out, n, BLOCK={block})",
        "        return out",
    ])
    ops = list(zip(chain, params, strict=True))
    # Forgetting (or mis-copying) an op that is the identity on non-negative input, where its input is known to
    # be non-negative, is no bug: such an op is never picked for a flaw.
    nonneg_in = [False]
    for op, _ in ops:
        nonneg_in.append(op.nonneg_out or (nonneg_in[-1] and op.identity_on_nonneg))
    harmless = [op.identity_on_nonneg and nonneg_in[i] for i, (op, _) in enumerate(ops)]
    tunable = [i for i, (op, _) in enumerate(ops) if op.params and not harmless[i]]
    if tunable and rng.random() < 0.5:  # a wrong constant: the last parameter of one op is mis-copied
        i = rng.choice(tunable)
        op, ps = ops[i]
        bad = ps[:-1] + (_fmt(float(ps[-1]) + 0.5),)
        flawed_ops = ops[:i] + [(op, bad)] + ops[i + 1:]
        flaw = (f"The {op.name} step used {bad[-1]} instead of {ps[-1]}; the kernel now uses the reference's "
                "constant.")
    else:  # a forgotten op in the chain
        i = rng.choice([j for j in range(len(ops)) if not harmless[j]])
        flawed_ops = ops[:i] + ops[i + 1:]
        flaw = f"The kernel skipped the {ops[i][0].name} step of the chain; it is applied in order now."
    return _task(
        "elementwise", variant, seed, "2", tuple(dict.fromkeys(op.torch_op for op in chain)),
        _reference(program, forward),
        _candidate(program, kernel(ops), host), _candidate(program, kernel(flawed_ops), host),
        plan="One fused Triton kernel applies the whole pointwise chain in registers: one read of each input, "
             "one write, each program handling a masked block of 1024 elements.",
        flaw=flaw,
    )


# ----------------------------------------------------------------------------------------------- row families


def _row_kernel(signature: str, body: Sequence[str]) -> str:
    """A one-program-per-row kernel over a contiguous (rows, n_cols) view, block padded to a power of two."""
    return "\n".join([
        f"def row_kernel(x_ptr, out_ptr, {signature}n_cols, BLOCK: tl.constexpr):",
        "    row = tl.program_id(0)",
        "    cols = tl.arange(0, BLOCK)",
        "    mask = cols < n_cols",
        *("    " + line for line in body),
    ])


def _row_launch(extra_args: str, out_shape: str, out_alloc: str) -> str:
    return _ROW_HOST + "\n".join([
        f"        out = {out_alloc}",
        f"        row_kernel[(rows,)](x2, out, {extra_args}n_cols, BLOCK=triton.next_power_of_2(n_cols))",
        f"        return out.reshape({out_shape})",
    ])


_LOAD = "x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other={other}).to(tl.float32)"
_STORE_ROW = "tl.store(out_ptr + row * n_cols + cols, y, mask=mask)"


def _reduction(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["reduction"])
    pre = rng.choice((None, "abs", "square"))
    scale = rng.choice((None, 0.5, 2.0, -1.5))
    if variant == "amax" and pre is None and scale is None:
        scale = 0.25  # so the flawed answer has something to forget
    keepdim = rng.random() < 0.5
    sizes = _row_sizes(rng)
    torch_pre = {None: "x", "abs": "torch.abs(x)", "square": "x * x"}[pre]
    tl_pre = {None: "x", "abs": "tl.abs(x)", "square": "x * x"}[pre]
    call = {"sum": "torch.sum", "mean": "torch.mean", "amax": "torch.amax"}[variant]
    expr = f"{call}({torch_pre}, dim=-1{', keepdim=True' if keepdim else ''})"
    forward = [f"return {expr}" + (f" * {_fmt(scale)}" if scale is not None else "")]
    words = {"sum": "Sum", "mean": "Mean", "amax": "Maximum"}[variant]
    what = {None: "x", "abs": "|x|", "square": "x^2"}[pre]
    program = _Program(
        doc=f"{words} of {what} over the last dimension{' (kept)' if keepdim else ''}"
            + (f", scaled by {_fmt(scale)}." if scale is not None else "."),
        sizes=sizes, init_params="", init_inputs="", ref_init=(), new_init=(), args="x",
        inputs=f"torch.randn({_shape(sizes)})",
    )
    fill = "float('-inf')" if variant == "amax" else "0.0"
    reduce = "tl.max" if variant == "amax" else "tl.sum"

    def kernel(*, pre_op: str = tl_pre, other: str = "0.0", mask_fill: bool = True, divisor: str = "n_cols",
               scaled: bool = True) -> str:
        body = [_LOAD.format(other=other), f"v = {pre_op}"]
        if mask_fill:
            body.append(f"v = tl.where(mask, v, {fill})")
        body.append(f"r = {reduce}(v, axis=0)")
        if variant == "mean":
            body.append(f"r = r / {divisor}")
        if scale is not None and scaled:
            body.append(f"r = r * {_fmt(scale)}")
        body.append("tl.store(out_ptr + row, r)")
        return _row_kernel("", body)

    out_shape = "x.shape[:-1] + (1,)" if keepdim else "x.shape[:-1]"
    host = _row_launch("", out_shape, "torch.empty(rows, device=x.device, dtype=x.dtype)")
    flaws = []
    if variant == "mean":
        flaws.append((kernel(divisor="BLOCK"),
                      "The mean divided by the padded block size BLOCK instead of the row length n_cols; it divides "
                      "by n_cols now."))
    if variant == "sum":
        flaws.append((kernel(other="1.0", mask_fill=False),
                      "Padded lanes past the row end were loaded as 1.0 and summed; they are loaded as 0.0 and "
                      "masked out of the sum now."))
    if pre is not None:
        flaws.append((kernel(pre_op="x"),
                      f"The kernel reduced x itself and forgot to take {what} first; the {pre} step is back."))
    if scale is not None:
        flaws.append((kernel(scaled=False),
                      f"The kernel forgot the final scale by {_fmt(scale)}; it multiplies the result now."))
    flawed, flaw = rng.choice(flaws)
    return _task(
        "reduction", variant, seed, "2" if pre or scale is not None else "1",
        tuple(o for o in (call, "torch.abs" if pre == "abs" else None, "torch.mul" if pre == "square" or scale
                          is not None else None) if o),
        _reference(program, forward), _candidate(program, kernel(), host), _candidate(program, flawed, host),
        plan="One Triton program per row: it loads the whole row as one masked block (padded to a power of two, "
             "padding neutralised), reduces it in registers and writes one value.",
        flaw=flaw,
    )


def _norm(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["norm"])
    affine = rng.random() < 0.6
    eps = rng.choice((1e-5, 1e-6))
    sizes = _row_sizes(rng)
    mult, shift = rng.choice((1.0, 2.0, 3.0)), rng.choice((0.0, 0.5, -1.0))
    ref_init = ["self.dim = dim", "self.eps = eps"]
    new_init = list(ref_init)
    if affine:  # non-trivial parameters, so a kernel cannot ignore them; same names so the judge copies them
        ref_init.append("self.weight = nn.Parameter(1.0 + 0.5 * torch.randn(dim))")
        new_init.append("self.weight = nn.Parameter(torch.ones(dim))")
        if variant == "layer_norm":
            ref_init.append("self.bias = nn.Parameter(0.1 * torch.randn(dim))")
            new_init.append("self.bias = nn.Parameter(torch.zeros(dim))")
    if variant == "layer_norm":
        forward = [f"return F.layer_norm(x, (self.dim,), {'self.weight, self.bias' if affine else 'None, None'}, "
                   "self.eps)"]
        ops: tuple[str, ...] = ("torch.nn.functional.layer_norm",)
        doc = "Layer normalization over the last dimension" + (" with learned scale and shift." if affine else ".")
    else:
        forward = ["rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)",
                   f"return x * rms{' * self.weight' if affine else ''}"]
        ops = ("torch.pow", "torch.mean", "torch.rsqrt", "torch.mul")
        doc = "RMS normalization over the last dimension" + (" with a learned scale." if affine else ".")
    program = _Program(
        doc=doc, sizes=sizes, init_params=", dim: int, eps: float", init_inputs=f"DIM, {eps!r}",
        ref_init=tuple(ref_init), new_init=tuple(new_init), args="x",
        inputs=f"torch.randn({_shape(sizes)}) * {_fmt(mult)}" + (f" {'-' if shift < 0 else '+'} {_fmt(abs(shift))}" if shift else ""),
    )

    def kernel(*, mask_diff: bool = True, divisor: str = "n_cols", use_bias: bool = True,
               use_weight: bool = True) -> str:
        body = [_LOAD.format(other="0.0")]
        if variant == "layer_norm":
            body += [f"mean = tl.sum(x, axis=0) / {divisor}",
                     "d = tl.where(mask, x - mean, 0.0)" if mask_diff else "d = x - mean",
                     f"var = tl.sum(d * d, axis=0) / {divisor}",
                     "y = d / tl.sqrt(var + eps)"]
        else:
            body += [f"ms = tl.sum(x * x, axis=0) / {divisor}", "y = x / tl.sqrt(ms + eps)"]
        if affine and use_weight:
            body.append("y = y * tl.load(w_ptr + cols, mask=mask, other=0.0)")
        if affine and variant == "layer_norm" and use_bias:
            body.append("y = y + tl.load(b_ptr + cols, mask=mask, other=0.0)")
        body.append(_STORE_ROW)
        sig = ("w_ptr, b_ptr, " if variant == "layer_norm" else "w_ptr, ") if affine else ""
        return _row_kernel(sig + "eps, ", body)

    args = ("self.weight, self.bias, " if variant == "layer_norm" else "self.weight, ") if affine else ""
    host = _row_launch(args + "self.eps, ", "x.shape", "torch.empty_like(x2)")
    flaws = [(kernel(divisor="BLOCK"),
              "The statistics were divided by the padded block size BLOCK instead of the row length n_cols; they "
              "divide by n_cols now.")]
    if variant == "layer_norm":
        flaws.append((kernel(mask_diff=False),
                      "Padded lanes held x - mean = -mean and added mean^2 terms to the variance; the centred values "
                      "are masked to 0 before the variance now."))
        if affine:
            flaws.append((kernel(use_bias=False), "The kernel forgot to add the bias; it is added after the scale."))
    elif affine:
        flaws.append((kernel(use_weight=False), "The kernel forgot to multiply by the learned weight; it does now."))
    flawed, flaw = rng.choice(flaws)
    return _task(
        "norm", variant, seed, "1", ops, _reference(program, forward), _candidate(program, kernel(), host),
        _candidate(program, flawed, host),
        plan="One Triton program per row: the row is loaded once as a masked block, the statistics are reduced "
             "in fp32 registers, and the normalized row is written back in the same pass.",
        flaw=flaw,
    )


def _softmax(rng: random.Random, seed: int) -> SyntheticTask:
    variant = rng.choice(VARIANTS["softmax"])
    temperature = rng.choice((1.0, 0.5, 2.0, 4.0))
    sizes = _row_sizes(rng)
    call = "F.softmax" if variant == "softmax" else "F.log_softmax"
    forward = [f"return {call}(x / self.temperature, dim=-1)"]
    program = _Program(
        doc=("Softmax" if variant == "softmax" else "Log-softmax") + " over the last dimension of x / temperature.",
        sizes=sizes, init_params=", temperature: float", init_inputs=_fmt(temperature),
        ref_init=("self.temperature = temperature",), new_init=("self.temperature = temperature",), args="x",
        inputs=f"torch.randn({_shape(sizes)})",
    )

    def kernel(*, other: str = "float('-inf')", use_temperature: bool = True, take_log: bool = True) -> str:
        body = [_LOAD.format(other=other)]
        if use_temperature:
            body.append("x = x / temperature")
        body += ["z = x - tl.max(x, axis=0)", "e = tl.exp(z)", "s = tl.sum(e, axis=0)"]
        if variant == "softmax":
            body.append("y = e / s")
        else:
            body.append("y = z - tl.log(s)" if take_log else "y = z - s")
        body.append(_STORE_ROW)
        return _row_kernel("temperature, ", body)

    host = _row_launch("self.temperature, ", "x.shape", "torch.empty_like(x2)")
    flaws = [(kernel(other="0.0"),
              "Padded lanes were loaded as 0.0, so exp(0 - max) of every padding lane entered the row sum; they "
              "are loaded as -inf now, which contributes exp(-inf) = 0.")]
    if temperature != 1.0:
        flaws.append((kernel(use_temperature=False),
                      "The kernel forgot to divide by the temperature before the max; it does now."))
    if variant == "log_softmax":
        flaws.append((kernel(take_log=False),
                      "The kernel subtracted the row sum instead of its logarithm; it subtracts log(sum) now."))
    flawed, flaw = rng.choice(flaws)
    return _task(
        "softmax", variant, seed, "1" if temperature == 1.0 else "2",
        (f"torch.nn.functional.{variant}", "torch.div"), _reference(program, forward),
        _candidate(program, kernel(), host), _candidate(program, flawed, host),
        plan="One Triton program per row: a numerically stable softmax (subtract the row max, exponentiate, "
             "normalise) on one masked block whose padding is loaded as -inf.",
        flaw=flaw,
    )


_GENERATORS = {"elementwise": _elementwise, "reduction": _reduction, "norm": _norm, "softmax": _softmax}


def _task(family: str, variant: str, seed: int, level: str, ops: tuple[str, ...], reference: str, solution: str,
          flawed: str, *, plan: str, flaw: str) -> SyntheticTask:
    digest = hashlib.sha256(reference.encode("utf-8")).hexdigest()[:12]
    return SyntheticTask(uuid=f"synthetic_{family}_{digest}", family=family, variant=variant, level=level,
                         ops=ops, reference=reference, solution=solution, flawed=flawed, plan=plan, flaw=flaw,
                         seed=seed)


# ------------------------------------------------------------------------------------------------- public API


def generate_task(family: str, seed: int) -> SyntheticTask:
    """The task of ``family`` drawn from ``seed`` (pure: same arguments, same task)."""
    if family not in _GENERATORS:
        raise ValueError(f"unknown synthetic family {family!r}; expected one of {list(FAMILIES)}")
    rng = random.Random(f"{family}:{seed}")  # a string seed is hashed stably across runs and processes
    return _GENERATORS[family](rng, seed)


def generate_tasks(count: int, seed: int = 0, families: Sequence[str] = FAMILIES,
                   max_tries_per_task: int = 50) -> list[SyntheticTask]:
    """``count`` distinct tasks (distinct references), families taken in turn, deterministic from ``seed``.

    Raises:
        ValueError: ``count`` < 0, an unknown family, or a family whose space ran out of distinct tasks.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not families:
        raise ValueError("families must name at least one family")
    for family in families:
        if family not in _GENERATORS:
            raise ValueError(f"unknown synthetic family {family!r}; expected one of {list(FAMILIES)}")
    tasks: list[SyntheticTask] = []
    seen: set[str] = set()
    draws = {family: 0 for family in families}
    for index in range(count):
        family = families[index % len(families)]
        for _ in range(max_tries_per_task):
            task = generate_task(family, seed * 1_000_003 + draws[family])
            draws[family] += 1
            if task.uuid not in seen:
                break
        else:
            raise ValueError(f"family {family!r} gave no new distinct task in {max_tries_per_task} draws "
                             f"({sum(t.family == family for t in tasks)} so far); ask for fewer tasks")
        seen.add(task.uuid)
        tasks.append(task)
    return tasks


def split_keys(held_out: Collection[str]) -> frozenset[str]:
    """Expand held-out names (``family`` or ``family/variant``) into the ``family/variant`` keys they cover."""
    keys: set[str] = set()
    for name in held_out:
        family, _, variant = name.partition("/")
        if family not in VARIANTS or (variant and variant not in VARIANTS[family]):
            known = [f"{f}/{v}" for f, vs in VARIANTS.items() for v in vs]
            raise ValueError(f"unknown held-out name {name!r}; use a family {list(FAMILIES)} or one of {known}")
        keys.update(f"{family}/{v}" for v in ((variant,) if variant else VARIANTS[family]))
    return frozenset(keys)


def split_tasks(tasks: Iterable[SyntheticTask], held_out: Collection[str] = DEFAULT_HELD_OUT) -> Split:
    """Split by ``family/variant``: a task is held out iff its key is named (directly or by its family).

    The split is by key, not by task, so no held-out task is a re-parameterisation of a training task.
    """
    keys = split_keys(held_out)
    train: list[SyntheticTask] = []
    kept: list[SyntheticTask] = []
    for task in tasks:
        (kept if task.key in keys else train).append(task)
    return Split(train=train, held_out=kept)
