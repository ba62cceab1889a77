"""The layering rules of the code base, read from the sources (``ast``): ``store_format`` never
imports ``pipelines`` or Spark, ``pipelines`` has no import circle, and a module longer than
~500 lines says in its docstring why it is long."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LONG = 500
LONG_REASON = "Long module:"


def _modules(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Modules this module imports (absolute names), at any depth of the file (lazy imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found.update(f"{mod}.{a.name}" for a in node.names)
    return found


def _graph(package: str) -> dict[str, set[str]]:
    mods = _modules(package)
    return {name: {m for m in _imports(name, path) if m in mods and m != name} for name, path in mods.items()}


def test_store_format_imports_neither_pipelines_nor_spark() -> None:
    for name, path in _modules("store_format").items():
        bad = {m for m in _imports(name, path) if m.split(".")[0] in ("pipelines", "pyspark", "delta")}
        assert not bad, f"{name} imports {sorted(bad)}"


@pytest.mark.parametrize("package", ["pipelines", "store_format"])
def test_no_import_circle(package: str) -> None:
    graph = _graph(package)
    # a package's __init__ re-exporting its own modules is not a circle of those modules
    for name in list(graph):
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
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


def test_long_modules_say_why() -> None:
    for package in ("store_format", "pipelines"):
        for name, path in _modules(package).items():
            text = path.read_text(encoding="utf-8")
            if text.count("\n") > LONG:
                doc = ast.get_docstring(ast.parse(text)) or ""
                assert LONG_REASON in doc, f"{name} has {text.count(chr(10))} lines and no '{LONG_REASON}' reason"
