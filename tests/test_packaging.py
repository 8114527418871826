"""The package installs what it imports, and CI runs exactly the README's test command."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mlcbook.book import tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _readme_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [b.strip() for b in re.findall(r"^```(?:bash|sh|console)?\n(.*?)^```", text,
                                          re.MULTILINE | re.DOTALL)]


def _ci_command() -> str:
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    # `command -v TOOL || { apt-get ... }` installs a system tool a test needs (chromium)
    commands = [ln for ln in lines if ln and not ln.startswith("#")
                and not ln.startswith(("set ", "cd ", "command -v "))]
    assert len(commands) == 1, f".ci/run should run one command, found {commands}"
    return commands[0]


def test_ci_runs_exactly_the_readme_test_command():
    assert _ci_command() == _readme_blocks()[1]
    assert _readme_blocks()[1].endswith("pip install -e \".[test]\" && pytest")


def test_ci_script_is_strict_and_executable():
    text = (ROOT / ".ci" / "run").read_text()
    assert text.startswith("#!/usr/bin/env bash\n") and "set -euo pipefail" in text
    assert (ROOT / ".ci" / "run").stat().st_mode & 0o111


def test_readme_first_command_installs_and_runs_the_tour():
    assert _readme_blocks()[0] == (
        "python -m venv .venv && . .venv/bin/activate && pip install . && mlcbook tour")


def test_console_script_points_at_the_cli():
    assert PYPROJECT["project"]["scripts"] == {"mlcbook": "mlcbook.cli:main"}
    from mlcbook.cli import main
    assert callable(main)


def _names(requirements: list[str]) -> set[str]:
    return {_normalize(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in requirements}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"mlcbook", "__future__"}


def _notebook_imports(path: Path) -> set[str]:
    cells = json.loads(path.read_text())["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    # IPython magics and shell escapes are not Python.
    return _imports("\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))))


def _undeclared(modules: set[str], declared: set[str]) -> list[str]:
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module in sorted(modules):
        dists = {_normalize(d) for d in providers.get(module, [])} or {_normalize(module)}
        if not dists & declared:
            missing.append(f"{module} (from {', '.join(sorted(dists))})")
    return missing


#: subpackages that need an extra beyond [project] dependencies -> that extra
EXTRAS = {"fuzz": "fuzz"}
#: modules that import an extra's package inside a function, for one feature -> that package
#: (the extra is named in the error they raise when it is missing)
OPTIONAL_IMPORTS = {"frontend/conformance.py": {"onnxruntime"},
                    "frontend/quantize.py": {"onnxruntime"}}


def test_every_runtime_import_is_a_declared_dependency():
    modules = set()
    for path in (ROOT / "mlcbook").rglob("*.py"):
        rel = path.relative_to(ROOT / "mlcbook")
        if rel.parts[0] not in EXTRAS:
            modules |= _imports(path.read_text()) - OPTIONAL_IMPORTS.get(rel.as_posix(), set())
    missing = _undeclared(modules, _names(PYPROJECT["project"]["dependencies"]))
    assert missing == [], f"imported but not in [project] dependencies: {missing}"


@pytest.mark.parametrize("package, extra", sorted(EXTRAS.items()))
def test_a_subpackage_with_an_extra_imports_only_it_and_the_dependencies(package, extra):
    modules = set()
    for path in (ROOT / "mlcbook" / package).rglob("*.py"):
        modules |= _imports(path.read_text())
    declared = _names(PYPROJECT["project"]["dependencies"] +
                      PYPROJECT["project"]["optional-dependencies"][extra])
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported but not in the dependencies or [{extra}]: {missing}"


def test_every_chapter_import_is_installed_for_readers():
    # readers install the `course` extra; chapter 5 compares with onnxruntime, which it adds
    declared = (_names(PYPROJECT["project"]["dependencies"])
                | _names(PYPROJECT["project"]["optional-dependencies"]["course"]))
    modules = set()
    for path in (ROOT / "chapters").glob("*.ipynb"):
        modules |= _notebook_imports(path)
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported by chapters but not in dependencies or the course extra: {missing}"


def test_every_test_import_is_declared():
    declared = (_names(PYPROJECT["project"]["dependencies"])
                | _names(PYPROJECT["project"]["optional-dependencies"]["test"]))
    modules = set()
    for path in (ROOT / "tests").rglob("*.py"):
        modules |= _imports(path.read_text())
    for path in (ROOT / "exercises").rglob("*.ipynb"):
        modules |= _notebook_imports(path)
    modules -= {p.stem for p in (ROOT / "tests").rglob("*.py")}  # the tests' own helpers
    modules -= {p.stem for p in (ROOT / "bench").glob("*.py")}   # bench helpers they check
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported by tests but not declared for them: {missing}"


def test_onnxruntime_is_an_extra_not_a_dependency():
    assert "onnxruntime" not in _names(PYPROJECT["project"]["dependencies"])
    for extra in ("test", "course", "fuzz"):
        assert "onnxruntime" in _names(PYPROJECT["project"]["optional-dependencies"][extra])


#: imports every module of mlcbook but the fuzzer (its extra is onnxruntime) and the `python
#: -m` entry points with onnxruntime made unimportable, then asks the two features that need
#: it (the conformance command's onnxruntime rates, quantize_qdq) for it
_WITHOUT_ONNXRUNTIME = """
import importlib, pkgutil, sys
sys.modules["onnxruntime"] = None  # import onnxruntime now raises ImportError
import mlcbook
for m in pkgutil.walk_packages(mlcbook.__path__, "mlcbook."):
    if not m.name.startswith("mlcbook.fuzz") and not m.name.endswith("__main__"):
        importlib.import_module(m.name)
from mlcbook.frontend import conformance
try:
    conformance.main(["--onnxruntime", "--ops", "Relu"])
except mlcbook.MLCError as e:
    print("ERROR", e)
try:
    from mlcbook.frontend import examples
    mlcbook.frontend.quantize_qdq(examples.mlp(batch=1), [{}])
except mlcbook.MLCError as e:
    print("QUANTIZE", e)
"""


def test_mlcbook_imports_without_onnxruntime_and_conformance_says_how_to_install_it():
    proc = subprocess.run([sys.executable, "-c", _WITHOUT_ONNXRUNTIME], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "ERROR [MLC-A001]" in proc.stdout
    assert 'pip install "mlcbook[test]"' in proc.stdout
    assert "QUANTIZE [MLC-A001] quantize_qdq calls onnxruntime's" in proc.stdout


def test_xgboost_comes_as_the_cpu_wheel_where_one_exists():
    deps = PYPROJECT["project"]["dependencies"]
    assert "xgboost-cpu; sys_platform == 'linux' or sys_platform == 'win32'" in deps
    assert "xgboost; sys_platform == 'darwin'" in deps


@pytest.mark.parametrize("folder, collected, skipped", [
    ("exercises", "exercises/solutions/01_", "exercises/01_"),
])
def test_pytest_collects_solutions_but_not_student_notebooks(folder, collected, skipped):
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", folder],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert collected in proc.stdout
    assert skipped not in proc.stdout
