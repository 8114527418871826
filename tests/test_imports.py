"""The package's import structure: no cycles between modules, no private name imported
across modules, no module over 600 lines, the layers of DESIGN.md (a lower layer never
imports a higher one), and the rooms of the graph layer.

Imports are read from the source (``ast``), including imports inside functions: a lazy
import that dodges a cycle at load time is still a cycle in the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "mlcbook"
MAX_LINES = 600

#: what each subpackage may not import (DESIGN.md, "Layering"); a lower layer never imports a
#: higher one, and nothing in the library imports grading or the CLI
FORBIDDEN = {
    "errors": {"tir", "te", "schedule", "codegen", "runtime", "ops", "rules", "graph",
               "frontend", "tune", "train", "grading", "cli"},
    "tir": {"te", "schedule", "codegen", "runtime", "ops", "rules", "graph", "frontend",
            "tune", "train", "grading", "cli"},
    "te": {"schedule", "codegen", "runtime", "rules", "graph", "frontend", "tune", "train",
           "grading", "cli"},
    "schedule": {"codegen", "runtime", "rules", "graph", "frontend", "tune", "train",
                 "grading", "cli"},
    "codegen": {"schedule", "rules", "graph", "frontend", "tune", "train", "grading", "cli"},
    "runtime": {"schedule", "rules", "graph", "frontend", "tune", "train", "grading", "cli"},
    "ops": {"schedule", "codegen", "runtime", "rules", "graph", "frontend", "tune", "train",
            "grading", "cli"},
    "rules": {"runtime", "ops", "graph", "frontend", "tune", "train", "grading", "cli"},
    "graph": {"frontend", "tune", "train", "grading", "cli"},
    "frontend": {"tune", "train", "grading", "cli"},
    "tune": {"train", "grading", "cli"},
    "train": {"tune", "grading", "cli"},
}

#: the rooms of the graph layer and what each may not import: the graph IR and its lowering
#: to call_tir ("ir": the modules at the top of mlcbook/graph/) import no room; ``passes``
#: (graph -> graph) and ``memory`` (the run plan of a legalized graph) import only the IR;
#: ``kernels`` (schedules PrimFuncs) knows no graph at all; ``run`` (runs a plan) reads the
#: plan; ``compile`` drives them all, and ``batch`` compiles once per batch size
GRAPH_ROOMS = {
    "ir": {"passes", "kernels", "memory", "run", "compile", "batch"},
    "passes": {"kernels", "memory", "run", "compile", "batch"},
    "kernels": {"ir", "passes", "memory", "run", "compile", "batch"},
    "memory": {"passes", "kernels", "run", "compile", "batch"},
    "run": {"passes", "kernels", "compile", "batch"},
}


def _modules() -> dict[str, Path]:
    mods = {}
    for p in sorted(ROOT.rglob("*.py")):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


MODULES = _modules()


def _is_package(mod: str) -> bool:
    return MODULES[mod].name == "__init__.py"


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".")
    if not _is_package(mod):
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod: str):
    """(imported module, imported name or None, line) for every import in ``mod``."""
    tree = ast.parse(MODULES[mod].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, None, node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(mod, node)
            for a in node.names:
                sub = f"{target}.{a.name}"
                if sub in MODULES:
                    yield sub, None, node.lineno
                else:
                    yield target, a.name, node.lineno


def _graph() -> dict[str, set[str]]:
    g = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _, _ in _imports(m):
            if target in MODULES and target != m:
                g[m].add(target)
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(10000, old))
    try:
        for v in g:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(old)  # later tests count on the usual limit
    return out


def _is_reexport_package(target: str, mod: str) -> bool:
    """A package importing from its own submodules to re-export them is not a cycle edge we
    can avoid: ``pkg/__init__`` -> ``pkg.sub`` is how a package shows its surface."""
    return _is_package(mod) and target.startswith(mod + ".")


def test_no_import_cycles():
    g = _graph()
    # A package's __init__ re-exporting its submodules is fine; the cycle it would close is
    # a submodule importing the package's __init__, which the other edges show.
    cycles = _cycles(g)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_no_private_name_imported_across_modules():
    bad = []
    for m in MODULES:
        for target, name, line in _imports(m):
            if target.startswith("mlcbook") and name and name.startswith("_") \
                    and not name.startswith("__"):
                bad.append(f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {name} from {target}")
            elif target.startswith("mlcbook") and name is None:
                last = target.rsplit(".", 1)[-1]
                src = target.rsplit(".", 1)[0]
                if last.startswith("_") and not last.startswith("__") and not src == m \
                        and not m.startswith(src):
                    bad.append(f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports private "
                               f"module {target}")
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_no_module_over_600_lines():
    long = {str(p.relative_to(ROOT.parent)): n for p in MODULES.values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by idea): {long}"


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer):
    bad = []
    for m in MODULES:
        parts = m.split(".")
        if len(parts) < 2 or parts[1] != layer:
            continue
        for target, _, line in _imports(m):
            tparts = target.split(".")
            if tparts[0] == "mlcbook" and len(tparts) > 1 and tparts[1] in FORBIDDEN[layer]:
                bad.append(f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {target}")
    assert not bad, f"{layer} imports a higher layer:\n" + "\n".join(bad)


def _room(mod: str) -> str | None:
    """The room of the graph layer ``mod`` is in (None: outside it, or its ``__init__``)."""
    parts = mod.split(".")
    if parts[:2] != ["mlcbook", "graph"] or len(parts) < 3:
        return None
    rooms = set(GRAPH_ROOMS) | {"compile", "batch"}
    return parts[2] if parts[2] in rooms else "ir"


@pytest.mark.parametrize("room", sorted(GRAPH_ROOMS))
def test_graph_room_imports_no_room_it_may_not(room):
    bad = []
    for m in MODULES:
        if _room(m) != room:
            continue
        for target, _, line in _imports(m):
            if _room(target) in GRAPH_ROOMS[room]:
                bad.append(f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {target}")
    assert not bad, f"the graph room {room!r} imports a room it may not:\n" + "\n".join(bad)
