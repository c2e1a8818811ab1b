"""Which expressions of a candidate provably evaluate to a constant (used by ``static_checks`` on ``except`` handlers).

A ``try`` whose handler answers with a constant is an environment probe, not a "kernel, else torch" fallback: the
handler cannot be handing back a result computed with torch. Production Triton libraries write such probes with
the constant one step removed (liger-kernel: ``except Exception: return default``, ``_DTensor = ()``, ``return
device`` where ``infer_device()`` returns string literals), so "constant" here is, conservatively:

* a literal, or a tuple / list / set / dict of constants;
* a local name of the enclosing function whose every binding there is ``name = <constant>`` (any other binding --
  augmented, unpacking, loop, ``with``, ``global`` -- makes it unknown);
* a parameter of a module-level function with a constant default, when the function never escapes (every use of
  its name is a direct call, decorators at most ``functools.cache`` / ``lru_cache``) and every call passes it a
  constant or nothing;
* a call of a module-level function whose every ``return`` is constant in that function.
Anything else (module-level names, attributes, other calls, methods) is not constant. Stdlib only.
"""

from __future__ import annotations

import ast

_MAX_DEPTH = 6
_CACHE_DECORATORS = ("functools.cache", "functools.lru_cache")


class ConstantValues:
    """Constant-ness of expressions in one parsed candidate (see the module docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.calls: dict[str, list[ast.Call]] = {}
        call_targets: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.calls.setdefault(node.func.id, []).append(node)
                call_targets.add(id(node.func))
        self.escaping = {
            n.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and id(n) not in call_targets
        }
        functools_rebound = any(
            isinstance(n, ast.Name) and n.id == "functools" and isinstance(n.ctx, ast.Store)
            for n in ast.walk(tree)
        )
        self.functools_imported = not functools_rebound and any(
            isinstance(n, ast.Import) and any(a.name == "functools" and a.asname is None for a in n.names)
            for n in tree.body
        )

    def is_constant(
        self, expr: ast.expr | None, scope: ast.FunctionDef | ast.AsyncFunctionDef | None, depth: int = 0
    ) -> bool:
        """Does ``expr`` (evaluated inside ``scope``, None: module level) always evaluate to a constant?"""
        if depth > _MAX_DEPTH:
            return False
        if expr is None or isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, ast.Tuple | ast.List | ast.Set):
            return all(self.is_constant(e, scope, depth + 1) for e in expr.elts)
        if isinstance(expr, ast.Dict):
            return all(k is not None and self.is_constant(k, scope, depth + 1) for k in expr.keys) and all(
                self.is_constant(v, scope, depth + 1) for v in expr.values
            )
        if isinstance(expr, ast.Name) and scope is not None:
            return self._constant_name(expr.id, scope, depth)
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in self.functions:
            callee = self.functions[expr.func.id]
            if _own_nodes(callee, ast.Yield | ast.YieldFrom):  # a generator: its values come out elsewhere
                return False
            return all(self.is_constant(r.value, callee, depth + 1) for r in _own_nodes(callee, ast.Return))
        return False

    def _constant_name(self, name: str, scope: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> bool:
        values: list[ast.expr] = []
        for node in _own_nodes(scope, ast.stmt | ast.expr | ast.ExceptHandler | ast.arg):
            if isinstance(node, ast.Global | ast.Nonlocal) and name in node.names:
                return False
            if isinstance(node, ast.Assign) and any(_binds(t, name) for t in node.targets):
                if not (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                    return False
                values.append(node.value)
            elif isinstance(node, ast.AnnAssign) and _binds(node.target, name):
                if node.value is None:
                    continue
                values.append(node.value)
            elif _binds_otherwise(node, name):
                return False
        parameters = _parameters(scope)
        if name in parameters and not self._constant_parameter(scope, name, parameters[name], depth):
            return False
        if name not in parameters and not values:
            return False  # a global, a closure variable or a builtin: not followed
        return all(self.is_constant(v, scope, depth + 1) for v in values)

    def _constant_parameter(
        self,
        function: ast.FunctionDef | ast.AsyncFunctionDef,
        name: str,
        slot: tuple[int | None, ast.expr | None],
        depth: int,
    ) -> bool:
        position, default = slot
        if function is not self.functions.get(function.name) or function.name in self.escaping:
            return False
        if default is None or not self.is_constant(default, None, depth + 1):
            return False
        if not all(self._is_cache_decorator(d) for d in function.decorator_list):
            return False
        for call in self.calls.get(function.name, []):
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                return False
            passed = [k.value for k in call.keywords if k.arg == name]
            if position is not None and position < len(call.args):
                passed.append(call.args[position])
            if not all(self.is_constant(value, None, depth + 1) for value in passed):
                return (
                    False  # only constants known at module level are accepted (no caller scope is followed)
                )
        return True

    def _is_cache_decorator(self, decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return self.functools_imported and ast.unparse(target) in _CACHE_DECORATORS


def _own_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef, kind: type | tuple) -> list:
    """Nodes of ``kind`` in ``function``'s own body (not inside nested functions, classes or lambdas)."""
    found, stack = [], list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, kind):
            found.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def _binds(target: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(target)
    )


def _binds_otherwise(node: ast.AST, name: str) -> bool:
    """Does ``node`` bind ``name`` in a way other than a plain assignment (checked by the caller)?"""
    if isinstance(node, ast.AugAssign | ast.For | ast.AsyncFor):
        return _binds(node.target, name)
    if isinstance(node, ast.With | ast.AsyncWith):
        return any(item.optional_vars is not None and _binds(item.optional_vars, name) for item in node.items)
    if isinstance(node, ast.NamedExpr | ast.comprehension):
        return _binds(node.target, name)
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, ast.Import | ast.ImportFrom):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name == name
    if isinstance(node, ast.Delete):
        return any(_binds(t, name) or (isinstance(t, ast.Name) and t.id == name) for t in node.targets)
    return False


def _parameters(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> dict[str, tuple[int | None, ast.expr | None]]:
    """name -> (position for positional calls or None, default or None) of every parameter of ``function``."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    found: dict[str, tuple[int | None, ast.expr | None]] = {
        a.arg: (i, d) for i, (a, d) in enumerate(zip(positional, defaults, strict=True))
    }
    found.update({a.arg: (None, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)})
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            found[extra.arg] = (None, None)
    return found
