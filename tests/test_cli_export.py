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


def test_a_cross_export_says_what_it_wrote_and_how_to_build_the_rest(tmp_path, capsys):
    onnx_path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    assert main(["export", str(onnx_path), "-o", str(out), "--name", "tiny", "--batch-size", "1",
                 "--target", "llvm -mtriple=aarch64-linux-gnu"]) == 0
    text = capsys.readouterr().out
    assert "None" not in text and "-ltiny" not in text
    listed = [ln.strip() for ln in text.splitlines() if ln.startswith("  ") and "/" in ln]
    assert listed[:3] == [str(out / "tiny.h"), str(out / "src"), str(out / "SHA256SUMS")]
    assert "cannot link code for llvm -mtriple=aarch64-linux-gnu, so no library was built" in text
    assert "--cc aarch64-linux-gnu-gcc" in text
    assert not (out / "libtiny.so").exists()


@pytest.mark.skipif(shutil.which("aarch64-linux-gnu-gcc") is None,
                    reason="no aarch64 cross compiler (Debian: apt-get install gcc-aarch64-linux-gnu)")
def test_a_cross_export_with_a_cross_compiler_builds_the_libraries(tmp_path, capsys):
    onnx_path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    assert main(["export", str(onnx_path), "-o", str(out), "--name", "tiny", "--batch-size", "1",
                 "--target", "llvm -mtriple=aarch64-linux-gnu",
                 "--cc", "aarch64-linux-gnu-gcc"]) == 0
    assert "-ltiny" in capsys.readouterr().out
    so = (out / "libtiny.so").read_bytes()
    assert so[:4] == b"\x7fELF" and int.from_bytes(so[18:20], "little") == 183   # EM_AARCH64
