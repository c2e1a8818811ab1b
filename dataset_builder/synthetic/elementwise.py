"""The ``elementwise`` family: a chain of 2-3 pointwise ops with parameters; variant ``unary`` (one input) or
``binary`` (one op also reads a second input ``y``). The flawed answer mis-copies a constant or forgets an
op."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from .programs import Program, candidate_program, fmt, reference_program, size_args
from .task import VARIANTS, SyntheticTask, make_task

ELEMENTWISE_DIMS = (96, 160, 192, 320)


@dataclass(frozen=True)
class _Pointwise:
    name: str
    torch: str  # uses {v} (the running tensor) and, for binary ops, y
    triton: str  # uses {v} and, for binary ops, yv
    torch_op: str
    params: tuple[tuple[float, ...], ...] = ()  # candidate values per parameter {p0}, {p1}
    binary: bool = False
    nonneg_out: bool = False  # never negative output
    identity_on_nonneg: bool = (
        False  # leaves non-negative input unchanged (forgetting it after one is no bug)
    )


_POINTWISE = (
    _Pointwise(
        "relu",
        "torch.relu({v})",
        "tl.maximum({v}, 0.0)",
        "torch.relu",
        nonneg_out=True,
        identity_on_nonneg=True,
    ),
    _Pointwise(
        "leaky_relu",
        "F.leaky_relu({v}, {p0})",
        "tl.where({v} > 0, {v}, {v} * {p0})",
        "torch.nn.functional.leaky_relu",
        ((0.01, 0.05, 0.1, 0.2),),
        identity_on_nonneg=True,
    ),
    _Pointwise(
        "sigmoid", "torch.sigmoid({v})", "1.0 / (1.0 + tl.exp(-{v}))", "torch.sigmoid", nonneg_out=True
    ),
    _Pointwise("tanh", "torch.tanh({v})", "2.0 / (1.0 + tl.exp(-2.0 * {v})) - 1.0", "torch.tanh"),
    _Pointwise("silu", "F.silu({v})", "{v} / (1.0 + tl.exp(-{v}))", "torch.nn.functional.silu"),
    _Pointwise(
        "softplus",
        "F.softplus({v})",
        "tl.where({v} > 20.0, {v}, tl.log(1.0 + tl.exp({v})))",
        "torch.nn.functional.softplus",
        nonneg_out=True,
    ),
    _Pointwise("scale", "{v} * {p0}", "{v} * {p0}", "torch.mul", ((0.5, 1.5, 2.0, -1.25, 3.0),)),
    _Pointwise("shift", "{v} + {p0}", "{v} + {p0}", "torch.add", ((0.25, -0.5, 1.0, -0.125),)),
    _Pointwise(
        "clamp",
        "torch.clamp({v}, {p0}, {p1})",
        "tl.minimum(tl.maximum({v}, {p0}), {p1})",
        "torch.clamp",
        ((-1.0, -0.5, -2.0), (0.5, 1.0, 1.5)),
    ),
    _Pointwise("abs", "torch.abs({v})", "tl.abs({v})", "torch.abs", nonneg_out=True, identity_on_nonneg=True),
    _Pointwise("square", "{v} * {v}", "{v} * {v}", "torch.mul", nonneg_out=True),
    _Pointwise("add_y", "{v} + y", "{v} + yv", "torch.add", binary=True),
    _Pointwise("mul_y", "{v} * y", "{v} * yv", "torch.mul", binary=True),
    _Pointwise("max_y", "torch.maximum({v}, y)", "tl.maximum({v}, yv)", "torch.maximum", binary=True),
)


def elementwise_task(rng: random.Random, seed: int) -> SyntheticTask:
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
    params = [tuple(fmt(rng.choice(values)) for values in op.params) for op in chain]

    def step(template: str, op_params: tuple[str, ...], v: str) -> str:
        return template.format(v=v, **{f"p{i}": p for i, p in enumerate(op_params)})

    forward = [f"x = {step(op.torch, ps, 'x')}" for op, ps in zip(chain, params, strict=True)] + ["return x"]
    sizes = {"BATCH": rng.choice((8, 16, 32)), "DIM": rng.choice(ELEMENTWISE_DIMS)}
    binary = variant == "binary"
    program = Program(
        doc="Fused pointwise chain: y = " + " -> ".join(op.name for op in chain) + ".",
        sizes=sizes,
        init_params="",
        init_inputs="",
        ref_init=(),
        new_init=(),
        args="x, y" if binary else "x",
        inputs=", ".join([f"torch.randn({size_args(sizes)})"] * (2 if binary else 1)),
    )
    block = 1024

    def kernel(ops: Sequence[tuple[_Pointwise, tuple[str, ...]]]) -> str:
        body = [f"v = {step(op.triton, ps, 'v')}" for op, ps in ops]
        return "\n".join(
            [
                f"def chain_kernel(x_ptr, {'y_ptr, ' if binary else ''}out_ptr, n, BLOCK: tl.constexpr):",
                "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
                "    mask = offs < n",
                "    v = tl.load(x_ptr + offs, mask=mask).to(tl.float32)",
                *(["    yv = tl.load(y_ptr + offs, mask=mask).to(tl.float32)"] if binary else []),
                *("    " + line for line in body),
                "    tl.store(out_ptr + offs, v.to(out_ptr.dtype.element_ty), mask=mask)",
            ]
        )

    host = "\n".join(
        [
            "        x = x.contiguous()",
            *(["        y = y.contiguous()"] if binary else []),
            "        out = torch.empty_like(x)",
            "        n = x.numel()",
            f"        chain_kernel[(triton.cdiv(n, {block}),)](x, {'y, ' if binary else ''}out, n, BLOCK={block})",
            "        return out",
        ]
    )
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
        bad = ps[:-1] + (fmt(float(ps[-1]) + 0.5),)
        flawed_ops = ops[:i] + [(op, bad)] + ops[i + 1 :]
        flaw = (
            f"The {op.name} step used {bad[-1]} instead of {ps[-1]}; the kernel now uses the reference's "
            "constant."
        )
    else:  # a forgotten op in the chain
        i = rng.choice([j for j in range(len(ops)) if not harmless[j]])
        flawed_ops = ops[:i] + ops[i + 1 :]
        flaw = f"The kernel skipped the {ops[i][0].name} step of the chain; it is applied in order now."
    return make_task(
        "elementwise",
        variant,
        seed,
        "2",
        tuple(dict.fromkeys(op.torch_op for op in chain)),
        reference_program(program, forward),
        candidate_program(program, kernel(ops), host),
        candidate_program(program, kernel(flawed_ops), host),
        plan="One fused Triton kernel applies the whole pointwise chain in registers: one read of each input, "
        "one write, each program handling a masked block of 1024 elements.",
        flaw=flaw,
    )
