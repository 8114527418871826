"""`mlcbook run`: outputs by their ONNX names, random inputs when none are given, --repeat and
--profile's per-kernel table."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime as ort
import pytest

import mlcbook as mb
from mlcbook import models
from mlcbook.cli import main
from mlcbook.cli_run import profile_table, random_input


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    onnx_path = models.save_tiny_convnet(d / "tiny.onnx")
    assert main(["compile", str(onnx_path), "-o", str(d / "tiny.mlcb"), "--batch-size", "2"]) == 0
    return d / "tiny.mlcb"


def test_run_without_inputs_uses_seeded_random_ones(artifact, tmp_path, capsys):
    capsys.readouterr()
    assert main(["run", str(artifact), "--seed", "3", "-o", str(tmp_path / "y.npy")]) == 0
    out = capsys.readouterr().out
    assert "random inputs (seed 3) for image (2, 1, 28, 28) float32" in out
    assert "probs: shape (2, 10), float32" in out
    # the same random input, made independently, through onnxruntime
    x = np.random.default_rng(3).standard_normal((2, 1, 28, 28)).astype(np.float32)
    sess = ort.InferenceSession(models.tiny_convnet().SerializeToString(),
                                providers=["CPUExecutionProvider"])
    expected, = sess.run(None, {"image": x})
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def test_repeat_and_profile_print_times_and_a_kernel_table(artifact, capsys):
    capsys.readouterr()
    assert main(["run", str(artifact), "--repeat", "5", "--profile"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"ran .* 5 times: median [0-9.]+ ms, fastest [0-9.]+ ms", out)
    assert "kernels (median of 5 runs):" in out
    table = out[out.index("kernel  "):]
    exe = mb.load(artifact)
    for kernel in exe.kernels:
        assert re.search(rf"^{re.escape(kernel)} +\d+ +[0-9.]+ +[0-9.]+%$", table, re.M), kernel
    assert re.search(rf"^all +{len(exe.plan.steps)} +[0-9.]+ +100.0%$", table, re.M)


def test_repeat_must_be_positive(artifact, capsys):
    assert main(["run", str(artifact), "--repeat", "0"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mlcbook run: error: [MLC-A001] --repeat must be at least 1, got 0")


def test_profile_table_sums_calls_and_sorts_by_share():
    table = profile_table([("relu", 1e-3), ("conv", 2e-3), ("relu", 2e-3)])
    rows = [ln.split() for ln in table.splitlines()[2:]]
    assert rows == [["relu", "2", "3.000", "60.0%"], ["conv", "1", "2.000", "40.0%"],
                    ["all", "3", "5.000", "100.0%"]]


@pytest.mark.parametrize("dtype, check", [
    ("float32", lambda a: a.dtype == np.float32 and a.std() > 0.5),
    ("int64", lambda a: a.dtype == np.int64 and not a.any()),
    ("bool", lambda a: a.dtype == np.bool_ and 0 < a.sum() < a.size),
])
def test_random_inputs_fit_their_dtype(dtype, check):
    a = random_input((64,), dtype, np.random.default_rng(0))
    assert a.shape == (64,) and check(a)


def test_run_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 1)" in out and "(default: 0)" in out
