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
from mlcbook.optional import PROVIDERS

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


def _extra(name: str) -> list[str]:
    """The requirements of the extra ``name``, with ``mlcbook[a,b]`` expanded to a's and b's."""
    out = []
    for req in PYPROJECT["project"]["optional-dependencies"][name]:
        nested = re.fullmatch(r"mlcbook\[([^\]]+)\]", req)
        out += [r for e in nested.group(1).split(",") for r in _extra(e.strip())] if nested else [req]
    return out


#: parts of the package that serve one extra's feature alone -> that extra: they may import its
#: packages at the top (the commands that reach them check through mlcbook.optional first)
EXTRAS = {"fuzz": "fuzz", "grading": "course", "book_html.py": "course"}


def _package_imports(only=None) -> dict[str, set[str]]:
    """{part (top folder or module of mlcbook): the third-party modules it imports}"""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "mlcbook").rglob("*.py"):
        part = path.relative_to(ROOT / "mlcbook").parts[0]
        found.setdefault(part, set()).update(_imports(path.read_text()))
    return found


def test_every_runtime_import_is_a_core_dependency():
    # anything else goes through mlcbook.optional.require, which names the extra
    modules = set().union(*(m for part, m in _package_imports().items() if part not in EXTRAS))
    missing = _undeclared(modules, _names(PYPROJECT["project"]["dependencies"]))
    assert missing == [], f"imported but not in [project] dependencies: {missing}"


@pytest.mark.parametrize("part, extra", sorted(EXTRAS.items()))
def test_a_part_with_an_extra_imports_only_it_and_the_dependencies(part, extra):
    declared = _names(PYPROJECT["project"]["dependencies"] + _extra(extra))
    missing = _undeclared(_package_imports()[part], declared)
    assert missing == [], f"imported but not in the dependencies or [{extra}]: {missing}"


@pytest.mark.parametrize("module", sorted(PROVIDERS))
def test_each_optional_module_is_in_the_extra_its_error_names(module):
    dist, extra = PROVIDERS[module]
    assert _normalize(dist.split("[")[0]) in _names(_extra(extra))


def test_the_core_is_what_compiling_and_running_needs():
    assert _names(PYPROJECT["project"]["dependencies"]) == {
        "numpy", "llvmlite", "onnx", "ml-dtypes", "tomli"}


def test_the_test_extra_installs_every_other_extra():
    test = _names(_extra("test"))
    for extra in PYPROJECT["project"]["optional-dependencies"]:
        assert _names(_extra(extra)) <= test, extra


def test_every_chapter_import_is_installed_for_readers():
    declared = _names(PYPROJECT["project"]["dependencies"]) | _names(_extra("course"))
    modules = set()
    for path in (ROOT / "chapters").glob("*.ipynb"):
        modules |= _notebook_imports(path)
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported by chapters but not in dependencies or the course extra: {missing}"


def test_every_test_import_is_declared():
    declared = _names(PYPROJECT["project"]["dependencies"]) | _names(_extra("test"))
    modules = set()
    for path in (ROOT / "tests").rglob("*.py"):
        modules |= _imports(path.read_text())
    for path in (ROOT / "exercises").rglob("*.ipynb"):
        modules |= _notebook_imports(path)
    modules -= {p.stem for p in (ROOT / "tests").rglob("*.py")}  # the tests' own helpers
    modules -= {p.stem for p in (ROOT / "bench").glob("*.py")}   # bench helpers they check
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported by tests but not declared for them: {missing}"


def test_every_bench_import_is_in_the_bench_extra():
    declared = _names(PYPROJECT["project"]["dependencies"]) | _names(_extra("bench"))
    modules = set()
    for path in (ROOT / "bench").glob("*.py"):
        modules |= _imports(path.read_text())
    modules -= {p.stem for p in (ROOT / "bench").glob("*.py")}
    missing = _undeclared(modules, declared)
    assert missing == [], f"imported by bench/ but not in the bench extra: {missing}"


def test_onnxruntime_is_an_extra_not_a_dependency():
    assert "onnxruntime" not in _names(PYPROJECT["project"]["dependencies"])
    for extra in ("test", "course", "fuzz", "bench"):
        assert "onnxruntime" in _names(_extra(extra))


#: imports every module of mlcbook but the parts of an extra and the `python -m` entry points
#: with every optional package made unimportable, then asks features that need one for it
_CORE_ONLY = """
import importlib, pkgutil, sys
from mlcbook.optional import PROVIDERS
for name in PROVIDERS:
    sys.modules[name] = None  # import NAME now raises ImportError
import mlcbook
skip = ("mlcbook.fuzz", "mlcbook.grading", "mlcbook.book_html")
for m in pkgutil.walk_packages(mlcbook.__path__, "mlcbook."):
    if not m.name.startswith(skip) and not m.name.endswith("__main__"):
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
try:
    mlcbook.tune.XGBModel()
except mlcbook.MLCError as e:
    print("XGBOOST", e)
print("HTML", mlcbook.tir.printer.to_html("x = 1")[:5])
"""


def test_mlcbook_imports_without_any_extra_and_features_name_theirs():
    proc = subprocess.run([sys.executable, "-c", _CORE_ONLY], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = dict(ln.split(" ", 1) for ln in proc.stdout.splitlines())
    assert lines["ERROR"].startswith("[MLC-I001] the conformance command's --onnxruntime needs "
                                     "onnxruntime")
    assert lines["ERROR"].endswith('Instead: pip install "mlcbook[fuzz]"')
    assert lines["QUANTIZE"].startswith("[MLC-I001] quantize_qdq (onnxruntime's static "
                                        "quantizer) needs onnxruntime")
    assert lines["XGBOOST"].endswith('Instead: pip install "mlcbook[tune]"')
    assert lines["HTML"] == "<pre>"  # no pygments: plain text, quietly


def test_xgboost_comes_as_the_cpu_wheel_where_one_exists():
    deps = PYPROJECT["project"]["optional-dependencies"]["tune"]
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
