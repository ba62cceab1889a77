"""The layering rules of the code base, read from the sources (``ast``): no module over 600 lines;
no import circle; no upward import (``store_format`` never imports ``pipelines`` or Spark, and no
module of a subpackage of ``pipelines`` imports the command line); no module importing another
module's private (``_name``) names."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pipelines", "store_format")
MAX_LINES = 600
COMMAND_LINE = {"pipelines.cli", "pipelines.__main__"}


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


PROJECT = {name: path for package in PACKAGES for name, path in _modules(package).items()}


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rsplit(".", 1)[0]


def _from_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute name of the module an ``ImportFrom`` reads from."""
    if not node.level:
        return node.module or ""
    base = _package_of(name, path).split(".")
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(name: str, path: Path) -> set[str]:
    """Modules this module imports (absolute names), at any depth of the file (lazy imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _from_module(name, path, node)
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def _graph(package: str) -> dict[str, set[str]]:
    mods = _modules(package)
    return {name: {m for m in _imports(name, path) if m in mods and m != name} for name, path in mods.items()}


def _private(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


def _private_uses(name: str, path: Path) -> list[str]:
    """``from x import _y`` and ``x._y`` where ``x`` is another project module: ``line: what``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}   # a local name -> the project module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            mod = _from_module(name, path, node)
            if mod.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if _private(alias.name) and mod != name:
                    found.append(f"{node.lineno}: from {mod} import {alias.name}")
                elif f"{mod}.{alias.name}" in PROJECT:
                    bound[alias.asname or alias.name] = f"{mod}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in bound:
            continue
        # follow submodules (pipelines.verify.report._x is report's) to the owner of the last name
        mods = [bound[base.id]]
        for part in reversed(chain[1:]):
            if f"{mods[-1]}.{part}" not in PROJECT:
                break
            mods.append(f"{mods[-1]}.{part}")
        if len(mods) == len(chain) and mods[-1] != name and _private(chain[0]):
            found.append(f"{node.lineno}: {mods[-1]}.{chain[0]}")
    return sorted(set(found), key=lambda s: int(s.split(":")[0]))


def test_store_format_imports_neither_pipelines_nor_spark() -> None:
    for name, path in _modules("store_format").items():
        bad = {m for m in _imports(name, path) if m.split(".")[0] in ("pipelines", "pyspark", "delta")}
        assert not bad, f"{name} imports {sorted(bad)}"


def test_subpackages_do_not_import_the_command_line() -> None:
    for name, path in _modules("pipelines").items():
        if len(path.relative_to(ROOT / "pipelines").parts) == 1:
            continue   # a module of pipelines itself
        bad = _imports(name, path) & COMMAND_LINE
        assert not bad, f"{name} imports {sorted(bad)}"


def _find_circle(graph: dict[str, set[str]]) -> None:
    """Fail with the first circle of ``graph`` (depth first, in name order)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package: str) -> None:
    graph = _graph(package)
    # a package's __init__ re-exporting its own modules is not a circle of those modules
    for name in list(graph):
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    _find_circle(graph)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_runs_back_up_a_layer(package: str) -> None:
    """The same with each subpackage as one unit (``pipelines.tables``, ``store_format.filedump``…):
    a module below a subpackage that some module of it uses never imports the subpackage back, lazy
    imports included.  The package's own ``__init__`` (the facade) is left out."""
    def unit(name: str) -> str:
        parts = name.split(".")
        return ".".join(parts[:2])

    graph: dict[str, set[str]] = {}
    for name, deps in _graph(package).items():
        if name == package:
            continue
        graph.setdefault(unit(name), set()).update(unit(d) for d in deps if d != package and unit(d) != unit(name))
    _find_circle(graph)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_over_600_lines(package: str) -> None:
    long = {name: n for name, path in _modules(package).items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_private_names_of_another(package: str) -> None:
    uses = {name: found for name, path in _modules(package).items() if (found := _private_uses(name, path))}
    assert not uses, "private names used from another module:\n" + "\n".join(
        f"{name}: {line}" for name, found in uses.items() for line in found)
