"""Inline an installed package's module into one self-contained source file (read from the wheel, never copied).

``inline_module("liger_kernel.ops.rms_norm", ["LigerRMSNormFunction"])`` reads the module's file from the
installed package (located with ``importlib.util.find_spec`` on the top-level package, so nothing of the package
is imported or run), keeps the top-level statements the named roots need (transitively), and replaces every
``from <package>... import name`` by the statements that define ``name`` in the module it comes from (again
transitively, following re-exports). Imports of other packages (torch, triton, stdlib) stay as written.

The result is the production code as shipped, minus what the roots never reach: helper modules first (the
ones others depend on before them), each in its own source order, then the module itself. Statements that bind
no name (a module-level expression, an ``assert``) are dropped. Anything the inliner cannot do faithfully
(a plain ``import <package>``, a star import, two different definitions of one name, a cycle between modules,
a root the module does not define) raises ``InlineError`` instead of producing a file that might run differently.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path


class InlineError(RuntimeError):
    """The module cannot be inlined faithfully; the message says which statement and why."""


@dataclass(frozen=True)
class Statement:
    """One top-level statement of a module: its text, the names it binds at top level and the names it reads."""

    module: str
    index: int
    text: str
    binds: frozenset[str]
    uses: frozenset[str]
    package_imports: tuple[tuple[str, str, str], ...]  # (local name, source module, source name)
    problem: str | None = None  # why this statement cannot be inlined, should anything need it
    import_targets: dict[str, frozenset[str]] = field(
        default_factory=dict
    )  # names bound only by imports -> what


def package_dir(package: str) -> Path:
    """Directory of an installed top-level package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InlineError(f"package {package!r} is not installed (pip install it first)")
    return Path(next(iter(spec.submodule_search_locations)))


def package_version(package: str) -> str:
    """Installed distribution version of ``package`` (its distribution name with '-' for '_')."""
    for name in (package.replace("_", "-"), package):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    raise InlineError(f"no installed distribution found for package {package!r}")


def module_path(module: str) -> Path:
    """Source file of ``module`` (``pkg.sub.mod``) inside its installed package."""
    top, *rest = module.split(".")
    base = package_dir(top).joinpath(*rest)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise InlineError(f"module {module!r} has no source file under {package_dir(top)}")


def _store_names(target: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _top_level_binds(node: ast.stmt, imports: bool = True) -> set[str]:
    """Names a statement binds in the module namespace (descends into if/try/with/for, not into defs)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import):
        return {alias.asname or alias.name.split(".")[0] for alias in node.names} if imports else set()
    if isinstance(node, ast.ImportFrom):
        return {alias.asname or alias.name for alias in node.names} if imports else set()
    if isinstance(node, ast.Assign):
        return set().union(*(_store_names(t) for t in node.targets))
    if isinstance(node, ast.AnnAssign | ast.AugAssign):
        return _store_names(node.target)
    names: set[str] = set()
    if isinstance(node, ast.For | ast.AsyncFor):
        names |= _store_names(node.target)
    if isinstance(node, ast.With | ast.AsyncWith):
        names |= {n for item in node.items if item.optional_vars for n in _store_names(item.optional_vars)}
    if isinstance(node, ast.Try | ast.TryStar):
        names |= {h.name for h in node.handlers if h.name}
    for part in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, part, []) or []:
            if isinstance(child, ast.ExceptHandler):
                for stmt in child.body:
                    names |= _top_level_binds(stmt, imports)
            elif isinstance(child, ast.stmt):
                names |= _top_level_binds(child, imports)
    return names


def _import_targets(node: ast.stmt) -> dict[str, frozenset[str]]:
    """Names the statement binds only through imports -> the dotted names imported (an `import torch` and a
    `try: import torch.distributed.tensor` both bind `torch` to torch: a harmless repeat across modules)."""
    targets: dict[str, set[str]] = {}
    stack: list[ast.AST] = [node]
    while stack:
        sub = stack.pop()
        if isinstance(sub, ast.Import):
            for a in sub.names:
                top = a.name.split(".")[0]
                targets.setdefault(a.asname or top, set()).add(a.name if a.asname else top)
        elif isinstance(sub, ast.ImportFrom):
            for a in sub.names:
                targets.setdefault(a.asname or a.name, set()).add(
                    f"{'.' * sub.level}{sub.module or ''}.{a.name}"
                )
        elif not isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            stack.extend(ast.iter_child_nodes(sub))
    others = _top_level_binds(node, imports=False)
    return {name: frozenset(found) for name, found in targets.items() if name not in others}


class _Module:
    """One parsed module of the package: its statements and which statements bind each name."""

    def __init__(self, name: str, package: str) -> None:
        self.name = name
        path = module_path(name)
        source = path.read_text()
        lines = source.splitlines()
        self.statements: list[Statement] = []
        self.binders: dict[str, list[int]] = {}
        for index, node in enumerate(ast.parse(source, str(path)).body):
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            text = "\n".join(lines[first - 1 : node.end_lineno])
            package_imports = self._package_imports(node, package, path)
            problem = None
            if package_imports is None:  # a plain import of the package itself
                package_imports, problem = (
                    (),
                    f"{path}:{node.lineno}: `{ast.unparse(node)}` cannot be inlined",
                )
            for sub in ast.walk(node):
                if (
                    sub is not node
                    and isinstance(sub, ast.Import | ast.ImportFrom)
                    and _names_package(sub, package)
                ):
                    problem = f"{path}:{sub.lineno}: nested import of {package} cannot be inlined"
            uses = frozenset(
                n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            )
            statement = Statement(
                name,
                index,
                text,
                frozenset(_top_level_binds(node)),
                uses,
                package_imports,
                problem,
                _import_targets(node),
            )
            self.statements.append(statement)
            for bound in statement.binds:
                self.binders.setdefault(bound, []).append(index)

    def _package_imports(
        self, node: ast.stmt, package: str, path: Path
    ) -> tuple[tuple[str, str, str], ...] | None:
        if isinstance(node, ast.Import):
            return None if _names_package(node, package) else ()
        if not isinstance(node, ast.ImportFrom):
            return ()
        module = node.module or ""
        if node.level:  # relative import: resolve against this module's package
            parent = self.name.split(".")
            parent = (
                parent[: len(parent) - node.level]
                if path.name != "__init__.py"
                else parent[: len(parent) - node.level + 1]
            )
            module = ".".join([*parent, module] if module else parent)
        if module.split(".")[0] != package:
            return ()
        if any(alias.name == "*" for alias in node.names):
            raise InlineError(f"{path}:{node.lineno}: star import from {module} cannot be inlined")
        return tuple((alias.asname or alias.name, module, alias.name) for alias in node.names)


def _names_package(node: ast.Import | ast.ImportFrom, package: str) -> bool:
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == package for alias in node.names)
    return node.level > 0 or (node.module or "").split(".")[0] == package


def inline_module(module: str, roots: list[str]) -> str:
    """Self-contained source defining ``roots`` as ``module`` of the installed package defines them.

    Raises:
        InlineError: a root is not defined by the module, or the code cannot be inlined faithfully (see the
            module docstring).
    """
    package = module.split(".")[0]
    modules: dict[str, _Module] = {}
    included: dict[str, set[int]] = {}
    depends: dict[str, set[str]] = {}
    aliases: dict[tuple[str, int], set[str]] = {}  # (module, import statement) -> `local = source_name` lines
    work = [(module, root, True) for root in roots]
    seen: set[tuple[str, str]] = set()
    while work:
        mod_name, name, required = work.pop()
        if (mod_name, name) in seen:
            continue
        seen.add((mod_name, name))
        mod = modules.get(mod_name) or modules.setdefault(mod_name, _Module(mod_name, package))
        indices = mod.binders.get(name, [])
        if not indices:
            if required:
                raise InlineError(f"{mod_name} does not define {name!r}")
            continue  # a builtin or a local name of some function
        for index in indices:
            statement = mod.statements[index]
            if statement.problem:
                raise InlineError(f"{statement.problem} (needed for {name!r})")
            if statement.package_imports:
                for local, source_module, source_name in statement.package_imports:
                    if local != name:
                        continue
                    depends.setdefault(mod_name, set()).add(source_module)
                    work.append((source_module, source_name, True))
                    if local != source_name:
                        aliases.setdefault((mod_name, index), set()).add(f"{local} = {source_name}")
                continue
            included.setdefault(mod_name, set()).add(index)
            work.extend((mod_name, used, False) for used in statement.uses)
    return _emit(modules, included, depends, module, aliases)


def _emit(
    modules: dict[str, _Module],
    included: dict[str, set[int]],
    depends: dict[str, set[str]],
    main: str,
    aliases: dict[tuple[str, int], set[str]],
) -> str:
    order: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in order:
            return
        if name in visiting:
            raise InlineError(f"import cycle between inlined modules through {name}")
        visiting.add(name)
        for dependency in sorted(depends.get(name, ())):
            visit(dependency)
        visiting.discard(name)
        order.append(name)

    visit(main)
    chunks: list[str] = []
    emitted_text: set[str] = set()
    owner: dict[str, Statement] = {}  # bound name -> the first emitted statement that binds it
    for name in order:
        chunk = []
        for index in sorted(included.get(name, set()) | {i for m, i in aliases if m == name}):
            if (name, index) in aliases:  # `from pkg.x import a as b`: the definition of `a` is inlined above
                chunk.append("\n".join(sorted(aliases[name, index])))
                continue
            statement = modules[name].statements[index]
            if statement.text in emitted_text:  # the same import written in two modules
                continue
            for bound in statement.binds:
                previous = owner.setdefault(bound, statement)
                same_import = (
                    previous.import_targets.get(bound) == statement.import_targets.get(bound) is not None
                )
                if previous.module != statement.module and not same_import:
                    raise InlineError(
                        f"{bound!r} is bound differently in {previous.module} and {statement.module}: "
                        f"inlining both into one file would change what one of them sees"
                    )
            emitted_text.add(statement.text)
            chunk.append(statement.text)
        if chunk:
            chunks.append(f"# ---- from {name} ----\n" + _join(chunk))
    return "\n\n\n".join(chunks) + "\n"


def _join(texts: list[str]) -> str:
    """Statements two blank lines apart, except one import after another."""
    out = texts[:1]
    for previous, text in zip(texts, texts[1:], strict=False):
        out.append(("\n" if _is_import(previous) and _is_import(text) else "\n\n\n") + text)
    return "".join(out)


def _is_import(text: str) -> bool:
    return text.startswith(("import ", "from "))
