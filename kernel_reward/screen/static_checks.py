"""Static checks on the candidate's AST, before any of its code runs.

Each finding has a named ``reason`` (a ``StaticReason`` value) so results and tests can say exactly what was
caught. ``syntax_error`` and ``missing_model_new`` make the candidate a ``compile_error``; every other finding
is a hack (background §6): the candidate is reported as ``hacked`` without being run. What is looked for:

* ModelNew derives from, or refers to, the reference class: the answer would come from PyTorch.
* ``try`` whose ``except`` handler computes something ("kernel, else fall back to torch"); a handler that only
  answers with a constant (``static_constants``), logs or re-raises is an environment probe and is allowed.
* Process / thread / file / network / introspection APIs, ``exec``, ``sys.exit``, ``__globals__``...: background
  work, escaping the evaluator, reading the harness' state, exiting early.
* Assignments to attributes of torch / triton / time / os / sys / builtins (also ``setattr``, ``os.environ``).
* ``torch.cuda`` streams and graphs: side-stream work hides from timing; graphs replay pointer-keyed results.
* No ``@triton.jit`` function at all: nothing to launch. Why each: docs/reward.md#the-static-screen.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field

from kernel_reward.screen.deny_lists import (
    COMPILER_ROOTS,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_MODULES,
    FORBIDDEN_OS_ATTRS,
    FORBIDDEN_SYS_ATTRS,
    FORBIDDEN_TORCH_CALLS,
    INTROSPECTION_ATTRS,
    PROTECTED_ROOTS,
    STREAM_ATTRS,
)
from kernel_reward.screen.static_constants import ConstantValues


class StaticReason(enum.StrEnum):
    SYNTAX_ERROR = "syntax_error"
    MISSING_MODEL_NEW = "missing_model_new"
    INHERITS_REFERENCE = "inherits_reference"
    USES_REFERENCE = "uses_reference"
    TRY_EXCEPT = "try_except"
    FORBIDDEN_IMPORT = "forbidden_import"
    FORBIDDEN_CALL = "forbidden_call"
    INTROSPECTION = "introspection"
    MONKEY_PATCH = "monkey_patch"
    CUDA_STREAM = "cuda_stream"
    NO_TRITON_KERNEL = "no_triton_kernel"
    TORCH_COMPILE = "torch_compile"


COMPILE_REASONS = frozenset({StaticReason.SYNTAX_ERROR, StaticReason.MISSING_MODEL_NEW})


@dataclass(frozen=True)
class Finding:
    reason: StaticReason
    line: int
    detail: str

    def describe(self) -> str:
        return f"{self.reason.value} (line {self.line}): {self.detail}"


@dataclass
class StaticReport:
    findings: list[Finding] = field(default_factory=list)
    # names of the functions the source decorates with @triton.jit
    triton_functions: frozenset[str] = frozenset()

    @property
    def compile_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.reason in COMPILE_REASONS]

    @property
    def hack_findings(self) -> list[Finding]:
        return [f for f in self.findings if f.reason not in COMPILE_REASONS]

    @property
    def reasons(self) -> list[str]:
        return sorted({f.reason.value for f in self.findings})


def check_candidate(source: str, entry_point: str = "Model") -> StaticReport:
    """Run every static check on ``source``. Never raises for bad candidate code."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:  # ValueError: source with NUL bytes
        line = getattr(exc, "lineno", 0) or 0
        return StaticReport([Finding(StaticReason.SYNTAX_ERROR, line, f"{type(exc).__name__}: {exc}")])
    visitor = _Visitor(entry_point, ConstantValues(tree))
    visitor.visit(tree)
    findings = visitor.findings
    if not any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body):
        findings.append(Finding(StaticReason.MISSING_MODEL_NEW, 0, "no top-level `class ModelNew`"))
    if not visitor.triton_functions:
        findings.append(Finding(StaticReason.NO_TRITON_KERNEL, 0, "no function decorated with @triton.jit"))
    return StaticReport(findings, frozenset(visitor.triton_functions))


def triton_function_names(source: str) -> frozenset[str]:
    """The judge's own reading of which Triton kernels a candidate defines: the names of the functions its source
    decorates with ``@triton.jit`` (under any alias of triton, nested or not). A launched kernel is named after its
    function, so these are the only kernel names that can be the candidate's own."""
    return check_candidate(source).triton_functions


class _Visitor(ast.NodeVisitor):
    def __init__(self, entry_point: str, values: ConstantValues) -> None:
        self.entry_point = entry_point
        self.values = values
        self.scopes: list[ast.FunctionDef | ast.AsyncFunctionDef] = []  # enclosing functions, innermost last
        self.findings: list[Finding] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted module path it stands for
        self.triton_functions: set[str] = set()

    # --- helpers ---------------------------------------------------------------------------------------------
    def _add(self, reason: StaticReason, node: ast.AST, detail: str) -> None:
        self.findings.append(Finding(reason, getattr(node, "lineno", 0), detail))

    def _dotted(self, node: ast.AST) -> str | None:
        """'torch.cuda.Stream' for an attribute chain rooted at a known alias, else None."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self.aliases.get(node.id, node.id)
        return ".".join([root, *reversed(parts)])

    # --- imports -----------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._check_module(node, alias.name)
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self._add(StaticReason.FORBIDDEN_IMPORT, node, f"relative import from {'.' * node.level}{module}")
        self._check_module(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}" if module else alias.name
            self._check_module(node, full)
            if module in ("os", "sys") and alias.name in FORBIDDEN_OS_ATTRS | FORBIDDEN_SYS_ATTRS:
                self._add(StaticReason.FORBIDDEN_IMPORT, node, f"from {module} import {alias.name}")
            if module == "torch.cuda" and alias.name in STREAM_ATTRS:
                self._add(StaticReason.CUDA_STREAM, node, f"from torch.cuda import {alias.name}")
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def _check_module(self, node: ast.AST, name: str) -> None:
        parts = name.split(".")
        if parts[0] in FORBIDDEN_MODULES:
            self._add(StaticReason.FORBIDDEN_IMPORT, node, f"import of {name}")
        if parts[0] == "torch" and len(parts) > 1 and parts[1] in COMPILER_ROOTS:
            self._add(
                StaticReason.TORCH_COMPILE,
                node,
                f"import of {name}: compiler-generated kernels are not your own",
            )

    # --- classes and functions ---------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "ModelNew":
            for base in node.bases:
                dotted = self._dotted(base) or ""
                if dotted.split(".")[-1] == self.entry_point:
                    self._add(
                        StaticReason.INHERITS_REFERENCE, node, f"ModelNew derives from {self.entry_point}"
                    )
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            dotted = self._dotted(target) or ""
            if dotted in ("triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"):
                self.triton_functions.add(node.name)
        self.scopes.append(node)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    # --- statements --------------------------------------------------------------------------------------------
    def visit_If(self, node: ast.If) -> None:
        # Completions often end with a self-test under `if __name__ == "__main__":` that builds Model to compare
        # against. That block never runs here (the candidate is imported under another name), so it is not checked.
        if _is_main_guard(node.test):
            for statement in node.orelse:
                self.visit(statement)
            return
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        # A fallback is a handler that computes something ("kernel, else torch"). A handler that only answers a
        # question about the environment (an import path, a version compare, a device lookup: `return False`,
        # `flag = None`, `pass`, re-raise, or a value that provably is a constant: `static_constants`) cannot hide a
        # failing kernel, so production Triton code keeps its probes.
        scope = self.scopes[-1] if self.scopes else None
        if node.handlers and not all(
            _is_probe_answer(stmt, self.values, scope) for handler in node.handlers for stmt in handler.body
        ):
            self._add(
                StaticReason.TRY_EXCEPT,
                node,
                "try/except whose handler computes (fallback paths hide failing kernels)",
            )
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def _check_store_target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._check_store_target(element, node)
            return
        if isinstance(target, ast.Subscript):
            dotted = self._dotted(target.value) or ""
            if dotted == "os.environ":
                self._add(StaticReason.MONKEY_PATCH, node, "writes os.environ")
            return
        if isinstance(target, ast.Attribute):
            dotted = self._dotted(target) or ""
            if dotted.split(".")[0] in PROTECTED_ROOTS:
                self._add(StaticReason.MONKEY_PATCH, node, f"assigns {dotted}")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store_target(target, node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store_target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store_target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_store_target(target, node)
        self.generic_visit(node)

    # --- expressions -------------------------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id in FORBIDDEN_BUILTINS and func.id not in self.aliases:
            self._add(StaticReason.FORBIDDEN_CALL, node, f"call of {func.id}()")
        if isinstance(func, ast.Name) and func.id == "getattr" and node.args:
            dotted = self._dotted(node.args[0]) or ""
            if dotted.split(".")[0] in ("os", "sys", "builtins", "subprocess"):
                self._add(
                    StaticReason.FORBIDDEN_CALL, node, f"getattr({dotted}, ...) hides which function is used"
                )
        if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args:
            dotted = self._dotted(node.args[0]) or ""
            if dotted.split(".")[0] in PROTECTED_ROOTS:
                self._add(StaticReason.MONKEY_PATCH, node, f"{func.id}({dotted}, ...)")
        dotted = self._dotted(func) or ""
        parts = dotted.split(".")
        if (
            parts[0] == "os"
            and (parts[-1] in FORBIDDEN_OS_ATTRS or dotted.startswith("os.environ."))
            and (parts[-1] not in ("get",))
        ):
            self._add(StaticReason.FORBIDDEN_CALL, node, f"call of {dotted}")
        if parts[0] == "sys" and len(parts) > 1 and parts[1] in FORBIDDEN_SYS_ATTRS:
            self._add(StaticReason.FORBIDDEN_CALL, node, f"call of {dotted}")
        if (
            parts[0] in ("torch", "numpy")
            and len(parts) == 2
            and parts[1] in FORBIDDEN_TORCH_CALLS | {"fromfile", "memmap"}
        ):
            self._add(StaticReason.FORBIDDEN_CALL, node, f"call of {dotted} (file access)")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in INTROSPECTION_ATTRS:
            self._add(StaticReason.INTROSPECTION, node, f"access to .{node.attr}")
        dotted = self._dotted(node) or ""
        parts = dotted.split(".")
        if parts[0] == "torch" and node.attr in STREAM_ATTRS and "cuda" in parts:
            self._add(StaticReason.CUDA_STREAM, node, f"use of {dotted}")
        if parts[0] == "torch" and len(parts) == 2 and parts[1] in COMPILER_ROOTS:
            self._add(
                StaticReason.TORCH_COMPILE,
                node,
                f"use of {dotted}: compiler-generated kernels are not your own",
            )
        if (
            parts[0] == "sys"
            and len(parts) == 2
            and parts[1] in FORBIDDEN_SYS_ATTRS
            and isinstance(node.ctx, ast.Load)
        ):
            self._add(StaticReason.INTROSPECTION, node, f"access to {dotted}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == self.entry_point and isinstance(node.ctx, ast.Load):
            self._add(StaticReason.USES_REFERENCE, node, f"refers to the reference class {self.entry_point}")
        if node.id in ("__builtins__", "__import__", "__loader__", "__spec__"):
            self._add(StaticReason.INTROSPECTION, node, f"access to {node.id}")
        self.generic_visit(node)


def _is_probe_answer(
    statement: ast.stmt, values: ConstantValues, scope: ast.FunctionDef | ast.AsyncFunctionDef | None
) -> bool:
    """Pure: does this handler statement only answer with a constant, log, or re-raise (no computation)?"""
    if isinstance(statement, ast.Pass | ast.Raise | ast.Import | ast.ImportFrom | ast.Continue | ast.Break):
        return True
    if isinstance(statement, ast.Return):
        return values.is_constant(statement.value, scope)
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return all(isinstance(t, ast.Name) for t in targets) and values.is_constant(statement.value, scope)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        root = statement.value.func
        while isinstance(root, ast.Attribute):
            root = root.value
        return isinstance(root, ast.Name) and root.id in ("warnings", "logging", "log", "logger", "print")
    return False


def _is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either operand order)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    operands = [test.left, test.comparators[0]]
    has_name = any(isinstance(o, ast.Name) and o.id == "__name__" for o in operands)
    has_main = any(isinstance(o, ast.Constant) and o.value == "__main__" for o in operands)
    return has_name and has_main
