"""The ten Triton kernels of liger-kernel 0.8.5, each as a (PyTorch reference, inlined ModelNew) pair.

Each ``ProductionKernel`` names the liger module and the autograd Function its ``ModelNew`` calls (the way liger's
own ``nn`` wrappers in ``liger_kernel.transformers`` call it), the reference program (``references``) and the
``ModelNew`` glue. The kernel code itself is not stored here: ``candidate_code`` inlines it from the installed
wheel at build time (``inline.inline_module``). References and glue are this project's own code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from benchmarks.production_kernels import references as refs
from benchmarks.production_kernels.inline import inline_module, package_version
from kernel_reward.screen.sizes import resize_source

PACKAGE = "liger_kernel"
PINNED_VERSION = "0.8.5"
SIZES = ("full", "small")


@dataclass(frozen=True)
class ProductionKernel:
    """One production kernel: where it lives in the wheel, the reference it must match, and the glue."""

    name: str
    module: str  # liger_kernel.ops.<x>
    roots: tuple[str, ...]  # the names the glue calls
    reference_body: str  # a program of ``references`` (without the import header)
    glue: str  # class ModelNew, appended after the inlined module
    small: dict[str, int] = field(default_factory=dict)  # CPU-interpreter sizes

    def reference_code(self, size: str = "full") -> str:
        """The reference program at its ``full`` (GPU) sizes or at its ``small`` (CPU interpreter) preset."""
        if size not in SIZES:
            raise ValueError(f"size must be one of {SIZES}, got {size!r}")
        source = refs.HEADER + self.reference_body
        return resize_source(source, self.small) if size == "small" else source

    def candidate_code(self) -> str:
        """The inlined liger module plus ``ModelNew``, read from the installed wheel now (see module docstring)."""
        inlined = inline_module(self.module, list(self.roots))
        source = (
            f"# {self.name}: {self.module} of {PACKAGE} {package_version(PACKAGE)} (installed wheel), inlined "
            f"with its helpers\n# by benchmarks/production_kernels; only ModelNew at the end is this project's "
            f"glue.\n\n{inlined}\n\n# ---- glue ----\nimport torch.nn as nn\n\n\n{self.glue}"
        )
        assert_self_contained(source, PACKAGE)
        return source


def assert_self_contained(source: str, package: str) -> None:
    """Raise ``ValueError`` when ``source`` imports ``package`` (directly, relatively, or by a module-name string)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == package for a in node.names):
            raise ValueError(f"line {node.lineno}: imports {package}")
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == package):
            raise ValueError(f"line {node.lineno}: imports from {'.' * node.level}{node.module or ''}")
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.split(".")[0] == package
        ):
            raise ValueError(f"line {node.lineno}: names the module {node.value!r}")


def _affine(function: str, call: str, *params: str) -> str:
    """ModelNew for a norm that owns per-feature parameters (the reference's names, shapes and creation order)."""
    lines = "".join(
        f"\n        self.{name} = nn.Parameter({init})" for name, init in (p.split("=", 1) for p in params)
    )
    return f"""class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__(){lines}

    def forward(self, x):
        return {function}.apply({call})
"""


def _stateless(signature: str, expression: str) -> str:
    return f"""class ModelNew(nn.Module):
    def forward(self, {signature}):
        return {expression}
"""


KERNELS: tuple[ProductionKernel, ...] = (
    ProductionKernel(
        "rms_norm",
        "liger_kernel.ops.rms_norm",
        ("LigerRMSNormFunction",),
        refs.RMS_NORM,
        _affine(
            "LigerRMSNormFunction", 'x, self.weight, 1e-6, 0.0, "llama", True', "weight=torch.ones(hidden)"
        ),
        refs.ROWS_SMALL,
    ),
    ProductionKernel(
        "layer_norm",
        "liger_kernel.ops.layer_norm",
        ("LigerLayerNormFunction",),
        refs.LAYER_NORM,
        _affine(
            "LigerLayerNormFunction",
            "x, self.weight, self.bias, 1e-5",
            "weight=torch.ones(hidden)",
            "bias=torch.zeros(hidden)",
        ),
        refs.ROWS_SMALL,
    ),
    ProductionKernel(
        "swiglu",
        "liger_kernel.ops.swiglu",
        ("LigerSiLUMulFunction",),
        refs.SWIGLU,
        _stateless("gate, up", "LigerSiLUMulFunction.apply(gate, up)"),
        refs.GATED_SMALL,
    ),
    ProductionKernel(
        "geglu",
        "liger_kernel.ops.geglu",
        ("LigerGELUMulFunction",),
        refs.GEGLU,
        _stateless("gate, up", "LigerGELUMulFunction.apply(gate, up)"),
        refs.GATED_SMALL,
    ),
    ProductionKernel(
        "softmax",
        "liger_kernel.ops.softmax",
        ("LigerSoftmaxFunction",),
        refs.SOFTMAX,
        _stateless("x", "LigerSoftmaxFunction.apply(x)"),
        refs.SOFTMAX_SMALL,
    ),
    ProductionKernel(
        # liger returns (loss, z_loss, token_accuracy, predicted_tokens); F.cross_entropy returns the loss alone.
        "cross_entropy",
        "liger_kernel.ops.cross_entropy",
        ("LigerCrossEntropyFunction",),
        refs.CROSS_ENTROPY,
        _stateless(
            "logits, target",
            'LigerCrossEntropyFunction.apply(logits, target, None, -100, 0.0, 0.0, "mean", None, False)[0]',
        ),
        refs.VOCAB_SMALL,
    ),
    ProductionKernel(
        "kl_div",
        "liger_kernel.ops.kl_div",
        ("LigerKLDivLossFunction",),
        refs.KL_DIV,
        _stateless(
            "log_probs, target_probs",
            'LigerKLDivLossFunction.apply(log_probs, target_probs, "batchmean", False, 1e-10)',
        ),
        refs.VOCAB_SMALL,
    ),
    ProductionKernel(
        "group_norm",
        "liger_kernel.ops.group_norm",
        ("LigerGroupNormFunction",),
        refs.GROUP_NORM,
        """class ModelNew(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.channels, self.groups = channels, groups
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return LigerGroupNormFunction.apply(x, self.weight, self.bias, self.channels, self.groups, 1e-6)
""",
        refs.GROUP_NORM_SMALL,
    ),
    ProductionKernel(
        "rope",
        "liger_kernel.ops.rope",
        ("LigerRopeFunction",),
        refs.ROPE,
        _stateless("q, k, cos, sin", "LigerRopeFunction.apply(q, k, cos, sin)"),
        refs.ROPE_SMALL,
    ),
    ProductionKernel(
        "dyt",
        "liger_kernel.ops.dyt",
        ("LigerDyTFunction",),
        refs.DYT,
        _affine(
            "LigerDyTFunction",
            "x, self.alpha, self.gamma, self.beta",
            "alpha=torch.ones(1) * 0.5",
            "gamma=torch.ones(hidden)",
            "beta=torch.zeros(hidden)",
        ),
        refs.ROWS_SMALL,
    ),
)
BY_NAME = {kernel.name: kernel for kernel in KERNELS}
