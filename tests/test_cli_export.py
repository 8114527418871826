"""`mlcbook export`: an ONNX model to a header and C libraries, errors as one line."""

from __future__ import annotations

import shutil

import pytest

from mlcbook import models
from mlcbook.cli import main

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


def test_export_writes_the_header_and_both_libraries(tmp_path, capsys):
    onnx_path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    assert main(["export", str(onnx_path), "-o", str(out), "--name", "tiny",
                 "--batch-size", "1"]) == 0
    assert {p.name for p in out.iterdir()} >= {"tiny.h", "libtiny.so", "libtiny.a"}
    assert "TINY_INPUT0_SHAPE[] = {1, 1, 28, 28}" in (out / "tiny.h").read_text()
    assert "-ltiny" in capsys.readouterr().out


def test_export_names_a_bad_c_name(tmp_path, capsys):
    onnx_path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    assert main(["export", str(onnx_path), "-o", str(tmp_path / "o"), "--name", "Tiny Net",
                 "--batch-size", "1"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("mlcbook export: error: [MLC-C008] export name 'Tiny Net'"), err
