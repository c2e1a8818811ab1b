"""What the Triton interpreter (the CPU mode) cannot run, or runs differently from a GPU, read two ways: from a
failure's text (``gap_in_error``: the runner writes it) and from the candidate's source (``gaps_in_source``: the
judge's own reading). A failure is labelled an interpreter gap only when both agree; a correct answer that used
a fast-math function is flagged, since the interpreter computes it exactly where a GPU approximates.

Pure Python, no torch or triton: the judge and the runner's shims (``runner.interpreter_shims``) share the tables.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

# libdevice name -> tl.math function of the same meaning (the interpreter already runs those)
LIBDEVICE_VIA_TL_MATH = {
    "abs": "abs",
    "ceil": "ceil",
    "cos": "cos",
    "erf": "erf",
    "exp": "exp",
    "exp2": "exp2",
    "floor": "floor",
    "fma": "fma",
    "log": "log",
    "log2": "log2",
    "rsqrt": "rsqrt",
    "sin": "sin",
    "sqrt": "sqrt",
    "sqrt_rn": "sqrt_rn",
    "div_rn": "div_rn",
    "fast_expf": "exp",
    "fast_logf": "log",
    "fast_log2f": "log2",
    "fast_sinf": "sin",
    "fast_cosf": "cos",
}
# libdevice name -> numpy function (elementwise; the result keeps the first tensor argument's dtype)
LIBDEVICE_VIA_NUMPY = {
    "tanh": "tanh",
    "sinh": "sinh",
    "cosh": "cosh",
    "tan": "tan",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "expm1": "expm1",
    "log1p": "log1p",
    "log10": "log10",
    "cbrt": "cbrt",
    "trunc": "trunc",
    "rint": "rint",
    "nearbyint": "rint",
    "fast_tanhf": "tanh",
    "fast_tanf": "tan",
    "fast_log10f": "log10",
    "pow": "power",
    "fast_powf": "power",
    "atan2": "arctan2",
    "fmod": "fmod",
    "hypot": "hypot",
    "copysign": "copysign",
    "fast_dividef": "divide",
}

# Kinds of gap, and the text a failure of that kind carries (the shims' and Triton's own messages).
LIBDEVICE, EXTERN, DRIVER, FAST_MATH = "libdevice", "extern", "driver", "fast_math"
GAP_DESCRIPTIONS = {
    LIBDEVICE: "a libdevice function without an interpreter version",
    EXTERN: "an extern / inline-asm call (no interpreter version)",
    DRIVER: "a GPU driver API (no driver under the interpreter)",
}
ERROR_MARKERS = (
    ("has no implementation under the Triton interpreter", LIBDEVICE),
    ("not supported in interpreter mode", EXTERN),
    ("0 active drivers", DRIVER),
)
_EXTERN_CALLS = frozenset({"inline_asm_elementwise", "extern_elementwise", "extern"})


@dataclass(frozen=True)
class SourceGap:
    """A construct of the candidate's source the interpreter cannot run (or, ``fast_math``, runs exactly)."""

    kind: str
    name: str
    line: int

    def __str__(self) -> str:
        return f"{self.name} (line {self.line})"


def gap_in_error(error: str | None) -> tuple[str, str] | None:
    """Pure: (kind, the error line that names it) when a failure's text reads as an interpreter gap, else None."""
    for marker, kind in ERROR_MARKERS:
        if error and marker in error:
            line = next(line.strip() for line in error.splitlines() if marker in line)
            return kind, line[-300:]
    return None


def interpreter_gap(error: str | None) -> str | None:
    """Pure: what the interpreter lacks and the error line that says so, when ``error`` reads as a gap."""
    found = gap_in_error(error)
    return None if found is None else f"{GAP_DESCRIPTIONS[found[0]]}: {found[1]}"


def gaps_in_source(code: str) -> list[SourceGap]:
    """Pure: every construct of ``code`` the interpreter cannot run or runs exactly (by the AST; unparsable code
    has none), in source order. libdevice functions are recognised by their module path or their import."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return []
    module_names = {"libdevice"}  # the names the libdevice modules go by here (``import ... as ld``)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            module_names |= {a.asname for a in node.names if a.asname and a.name.endswith("libdevice")}
    gaps = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("libdevice"):
            gaps += [gap for alias in node.names if (gap := _libdevice_gap(alias.name, node.lineno))]
        elif isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner.rsplit(".", 1)[-1] in module_names:
                gap = _libdevice_gap(node.attr, node.lineno)
            elif node.attr in _EXTERN_CALLS:
                gap = SourceGap(EXTERN, f"{owner}.{node.attr}", node.lineno)
            elif node.attr == "active" and owner.endswith("driver"):
                gap = SourceGap(DRIVER, f"{owner}.active", node.lineno)
            else:
                gap = None
            if gap is not None:
                gaps.append(gap)
    return sorted(set(gaps), key=lambda gap: (gap.line, gap.name))


def _libdevice_gap(name: str, line: int) -> SourceGap | None:
    if name == "*":
        return None
    if name not in LIBDEVICE_VIA_TL_MATH and name not in LIBDEVICE_VIA_NUMPY:
        return SourceGap(LIBDEVICE, f"libdevice.{name}", line)
    return SourceGap(FAST_MATH, f"libdevice.{name}", line) if name.startswith("fast_") else None


def _dotted(node: ast.expr) -> str:
    """``a.b.c`` for a chain of names and attributes; "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
