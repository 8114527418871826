"""The core install alone (`pip install .`, no extra) in a fresh venv: the tour, compile, run,
save/load and export work; features of an extra say which one to install; the venv stays
within the issue's 310 MB.

The venv is made without pip (``python -m venv --without-pip``) and this suite's pip installs
into it (``pip --python VENV/bin/python install .``): what is measured is mlcbook and what it
depends on, not the ~28 MB of pip and setuptools that ``python -m venv`` copies into every
venv (Python 3.11; 3.12 and later copy pip only). It installs from PyPI through pip's own
download cache (``PIP_CACHE_DIR`` or ``~/.cache/pip``), so a second run downloads nothing;
the project is copied first, so that building it writes nothing into the work tree.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the issue's budget for a compiler-only environment, in MB (10^6 bytes of du's disk usage)
MAX_VENV_MB = 310

pytestmark = pytest.mark.slow


def _disk_bytes(path: Path) -> int:
    """Disk usage of everything under ``path`` (what ``du -s`` counts), in bytes."""
    return sum(p.lstat().st_blocks for p in path.rglob("*")) * 512


def _run(*cmd, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    # the venv's own interpreter and scripts, none of the suite's environment
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    """(venv folder, its bin folder, bytes the install added) with mlcbook's core installed
    (no pip in the venv: this suite's pip installs into it)."""
    base = tmp_path_factory.mktemp("core")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "mlcbook", src / "mlcbook",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = base / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    fresh = _disk_bytes(venv)
    bin_dir = venv / "bin"
    # pip 22.3 and later install into another interpreter's environment with --python
    pip = _run(sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", src,
               timeout=1200)
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    return venv, bin_dir, _disk_bytes(venv) - fresh


def test_the_core_installs_no_extra(core):
    _, bin_dir, _ = core
    probe = ("import importlib.util as u; print([m for m in ('xgboost', 'tqdm', 'matplotlib', "
             "'onnxruntime', 'nbclient', 'sklearn', 'threadpoolctl') if u.find_spec(m)])")
    proc = _run(bin_dir / "python", "-c", probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_venv_has_no_pip_of_its_own(core):
    _, bin_dir, _ = core
    proc = _run(bin_dir / "python", "-c", "import importlib.util as u; "
                "print([m for m in ('pip', 'setuptools') if u.find_spec(m)])")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_core_install_stays_within_its_budget(core, capsys):
    venv, _, added = core
    total = _disk_bytes(venv)
    with capsys.disabled():
        print(f"\ncore install: the venv is {total / 1e6:.0f} MB ({total / 2**20:.0f} MiB), of "
              f"which pip install . added {added / 1e6:.0f} MB ({added / 2**20:.0f} MiB)")
    assert total <= MAX_VENV_MB * 10**6


def test_the_tour_compile_run_and_export_work_with_the_core_alone(core, tmp_path):
    _, bin_dir, _ = core
    mlcbook = bin_dir / "mlcbook"
    tour = _run(mlcbook, "tour", "--save", tmp_path, cwd=tmp_path)
    assert tour.returncode == 0, tour.stdout[-2000:] + tour.stderr[-2000:]
    model, image = tmp_path / "tiny_convnet.onnx", tmp_path / "image.npy"
    comp = _run(mlcbook, "compile", model, "-o", tmp_path / "m.mlcb",
                "--batch-size", "1", cwd=tmp_path)
    assert comp.returncode == 0, comp.stderr
    # the tour's input is a batch; compile for its size so that run accepts it
    batch = _run(bin_dir / "python", "-c",
                 f"import numpy as np; print(np.load({str(image)!r}).shape[0])").stdout.strip()
    comp = _run(mlcbook, "compile", model, "-o", tmp_path / "m.mlcb",
                "--batch-size", batch, cwd=tmp_path)
    assert comp.returncode == 0, comp.stderr
    run = _run(mlcbook, "run", tmp_path / "m.mlcb", "-i", image, "-o", tmp_path / "y.npy",
               cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    exp = _run(mlcbook, "export", model, "-o", tmp_path / "out", "--name", "net",
               "--batch-size", "1", cwd=tmp_path)
    assert exp.returncode == 0, exp.stderr
    assert {"net.h", "libnet.so", "libnet.a"} <= {p.name for p in (tmp_path / "out").iterdir()}


_SAVE_LOAD = """
import sys, numpy as np, mlcbook as mb
exe = mb.compile(mb.from_onnx(mb.models.tiny_convnet(), batch_size=2))
x = np.random.default_rng(0).standard_normal(exe.plan.inputs[0][1].shape).astype("float32")
exe.save(sys.argv[1])
same = np.array_equal(mb.load(sys.argv[1])(x), exe(x))
print("same" if same else "different")
"""


def test_save_and_load_work_with_the_core_alone(core, tmp_path):
    _, bin_dir, _ = core
    proc = _run(bin_dir / "python", "-c", _SAVE_LOAD, tmp_path / "m.mlcb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "same"


@pytest.mark.parametrize("args, extra", [
    (["tune", "{model}", "--trials", "2", "-o", "{out}/r.jsonl", "--batch-size", "1"], "tune"),
    (["grade", "{out}/nb.ipynb"], "course"),
    (["book", "build", "-o", "{out}/site"], "course"),
])
def test_a_feature_of_an_extra_names_it_in_a_core_install(core, tmp_path, args, extra):
    _, bin_dir, _ = core
    model = tmp_path / "m.onnx"
    _run(bin_dir / "python", "-c",
         f"import mlcbook as mb; mb.models.save_tiny_convnet({str(model)!r})")
    argv = [a.format(model=model, out=tmp_path) for a in args]
    proc = _run(bin_dir / "mlcbook", *argv, cwd=ROOT)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[MLC-I001]" in proc.stderr
    assert f'pip install "mlcbook[{extra}]"' in proc.stderr
    assert "Traceback" not in proc.stderr
