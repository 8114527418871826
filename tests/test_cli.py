"""The mlcbook command: argument handling and error messages (no kernels started here)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlcbook import book
from mlcbook.cli import main


def test_python_dash_m_runs_the_cli():
    proc = subprocess.run([sys.executable, "-m", "mlcbook", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("mlcbook ")


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "tour" in capsys.readouterr().out


def test_book_lists_chapters_with_status(capsys):
    assert main(["book"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    for chapter in book.chapters():  # every chapter on its own line, with its status
        assert any(f"{chapter.number:>4}. {chapter.title}" in line and
                   line.rstrip().endswith(chapter.status) for line in lines), chapter.title
    assert "Part I. Tensor programs" in out


def test_make_student_check_reports_in_sync(capsys):
    assert main(["book", "make-student", "--check"]) == 0
    assert "in sync" in capsys.readouterr().out


def test_grade_missing_notebook_is_an_error(capsys, tmp_path):
    assert main(["grade", str(tmp_path / "01_nope.ipynb")]) == 1
    err = capsys.readouterr().err
    assert "mlcbook grade: error: [MLC-B001] notebook" in err and "does not exist" in err


def test_grade_needs_a_chapter_prefix(capsys, tmp_path):
    nb = tmp_path / "homework.ipynb"
    nb.write_text("{}")
    assert main(["grade", str(nb)]) == 1
    assert "cannot tell which chapter homework.ipynb belongs to" in capsys.readouterr().err


def test_grade_unknown_chapter(capsys, tmp_path):
    nb = tmp_path / "42_x.ipynb"
    nb.write_text("{}")
    assert main(["grade", str(nb)]) == 1
    assert "the book has no chapter 42" in capsys.readouterr().err


def test_grade_unknown_kernel(capsys):
    from mlcbook import book
    assert main(["grade", str(book.chapter(1).solutions), "--kernel", "no-such-kernel"]) == 1
    assert "there is no Jupyter kernel named 'no-such-kernel'" in capsys.readouterr().err


def test_grade_requires_a_notebook():
    with pytest.raises(SystemExit):
        main(["grade"])


def test_machine_prints_the_model_of_a_named_cpu(capsys):
    assert main(["machine", "--target", "llvm -mcpu=znver3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("znver3 (x86_64)") and "256-bit, 16 registers" in out
    assert "L1d 32 KiB" in out and "dot products  none" in out


def test_machine_of_an_unknown_target_is_a_clear_error(capsys):
    assert main(["machine", "--target", "gcc -O2"]) == 1
    assert "unknown target 'gcc -O2'" in capsys.readouterr().err
