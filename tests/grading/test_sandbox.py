"""The grading kernel's confinement (Landlock): Python, the mlcbook package and the system
are readable, the repository around the package (so the solutions) is not, and only the
kernel's own folder is writable. Checked in a child process, since confinement is for good."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mlcbook
from mlcbook import book
from mlcbook.errors import GradingError
from mlcbook.grading import grade as grade_module
from mlcbook.grading import sandbox

pytestmark = pytest.mark.skipif(not sandbox.available(), reason="no Landlock on this system")

REPO = Path(mlcbook.__file__).resolve().parents[1]

_PROBE = """
import sys
from pathlib import Path
from mlcbook.grading.sandbox import Confinement
Confinement.for_kernel(Path(sys.argv[1])).apply()
for path in sys.argv[2:]:
    try:
        if path.startswith("w:"):
            open(path[2:], "w").write("x")
        else:
            open(path, "rb").read(1)
        print("ok", path)
    except PermissionError:
        print("denied", path)
"""


def _probe(workdir, *paths) -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, str(workdir), *map(str, paths)],
                          capture_output=True, text=True, check=True)
    return {path: verdict for verdict, path in (line.split(" ", 1)
                                                for line in done.stdout.splitlines())}


@pytest.mark.parametrize("path", [book.chapter(1).solutions, REPO / "exercises" / "solutions"
                                  / "05_end_to_end_model_execution.ipynb", REPO / "book.toml"])
def test_the_repository_and_its_solutions_are_unreadable(tmp_path, path):
    assert path.is_file()
    assert _probe(tmp_path, path) == {str(path): "denied"}


@pytest.mark.parametrize("path", [Path(mlcbook.__file__), Path(sys.executable),
                                  Path(sandbox.__file__)])
def test_python_and_the_package_stay_readable(tmp_path, path):
    assert _probe(tmp_path, path) == {str(path): "ok"}


def test_only_the_kernels_folder_is_writable(tmp_path):
    inside, outside = tmp_path / "work" / "x.txt", tmp_path / "elsewhere.txt"
    inside.parent.mkdir()
    got = _probe(inside.parent, f"w:{inside}", f"w:{outside}")
    assert got == {f"w:{inside}": "ok", f"w:{outside}": "denied"}


def test_isolate_refuses_to_grade_without_landlock(monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: False)
    with pytest.raises(GradingError, match=r"--isolate confines the kernel with Linux Landlock"
                                           r".*Instead: grade untrusted notebooks in a "
                                           r"disposable container"):
        grade_module.grade_notebook(book.chapter(1).exercises, isolate=True)
