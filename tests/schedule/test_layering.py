"""The schedule package imports without circles (imports inside functions count)."""

import ast
from pathlib import Path

import mlcbook.schedule

PACKAGE = Path(mlcbook.schedule.__file__).parent


def _imports(path: Path) -> set[str]:
    """The sibling modules ``path`` imports, at any depth of its code."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return out


def test_schedule_modules_import_each_other_without_a_cycle():
    graph = {p.stem: _imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    done: set[str] = set()

    def visit(mod: str, stack: list[str]) -> None:
        if mod in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(mod):] + [mod]))
        if mod in done or mod not in graph:
            return
        for dep in sorted(graph[mod]):
            visit(dep, stack + [mod])
        done.add(mod)

    for mod in sorted(graph):
        visit(mod, [])
