"""The package's import graph has no cycle, and no function hides an import (the usual way to dodge one).

Edges are every `import` of a streamlet module at module level, `if TYPE_CHECKING:` blocks included: a cycle
that only type checkers see is still a tangle. Function-local imports are allowed only where they keep an
optional or heavy dependency off the import path (the CLI's subcommands and the PySpark extra).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "streamlet"
# the CLI modules import each subcommand's dependencies when it runs (`experiments.cli` the Spark report, which
# itself depends on experiments' pure report modules); the PySpark extra is optional
LOCAL_IMPORTS_ALLOWED = ("streamlet.cli", "streamlet.experiments.cli", "streamlet.spark")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text(), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def _targets(node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.module is not None and node.level == 0:
        names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return {name for name in names if name in known and name.startswith("streamlet")}


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If | ast.Try):
            found.extend(n for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom))
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_in_the_package() -> None:
    modules = _modules()
    known = set(modules)
    graph = {
        name: {t for node in _module_level_imports(tree) for t in _targets(node, known)} - {name}
        for name, tree in modules.items()
    }
    # a package's submodule importing its own package __init__ is the only way `import a.b` works: not a cycle
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def test_no_function_local_imports_outside_the_cli() -> None:
    offenders = []
    for name, tree in _modules().items():
        if name.startswith(LOCAL_IMPORTS_ALLOWED):
            continue
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                offenders += [
                    f"{name}.{func.name}:{n.lineno}"
                    for n in ast.walk(func)
                    if isinstance(n, ast.Import | ast.ImportFrom)
                ]
    assert offenders == []


def test_spark_depends_on_experiments_and_not_back() -> None:
    """The experiment report's Spark job reads the pure report modules; experiments import nothing of Spark at
    module level (its CLI loads the job when `report` runs)."""
    modules = _modules()
    known = set(modules)
    back = {
        f"{name} -> {target}"
        for name, tree in modules.items()
        if name.startswith("streamlet.experiments")
        for node in _module_level_imports(tree)
        for target in _targets(node, known)
        if target.startswith("streamlet.spark")
    }
    assert back == set()


def test_the_checker_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
