"""mlcbook.paths: a path to write that is a folder, a file, or under a missing folder is an
MLCError naming it, before any work; and where each writer uses the check."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import mlcbook as mb
from mlcbook import book
from mlcbook.book_html import build
from mlcbook.cli import main
from mlcbook.errors import ArtifactError, BookError, DatabaseError, ExportError
from mlcbook.frontend import examples
from mlcbook.paths import output_file, output_folder
from mlcbook.tune.tasks import tune_model


@pytest.fixture
def a_file(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    return f


def test_output_file_accepts_a_new_file_in_an_existing_folder(tmp_path):
    assert output_file(tmp_path / "m.mlcb", "the model", ArtifactError) == tmp_path / "m.mlcb"


@pytest.mark.parametrize("where,msg", [
    (lambda d, f: d, "it is a folder; Instead: give a file name inside it"),
    (lambda d, f: d / "missing" / "m.mlcb", "the folder .*missing' does not exist; Instead"),
    (lambda d, f: f / "m.mlcb", "a_file' is a file, not a folder; Instead"),
    (lambda d, f: None, "needs a path .*got None"),
])
def test_output_file_refuses_paths_it_cannot_write(tmp_path, a_file, where, msg):
    with pytest.raises(ArtifactError, match=rf"\[MLC-C007\] .*{msg}"):
        output_file(where(tmp_path, a_file), "the model", ArtifactError)


def test_output_folder_creates_a_missing_folder(tmp_path):
    assert output_folder(tmp_path / "a" / "b", "the site", BookError).is_dir()


@pytest.mark.parametrize("sub", ["", "inner"])
def test_output_folder_refuses_a_file(a_file, sub):
    with pytest.raises(BookError, match="a_file'.* is a file, not a folder"):
        output_folder(a_file / sub if sub else a_file, "the site", BookError)


@pytest.fixture(scope="module")
def exe():
    return mb.compile(mb.from_onnx(examples.mlp(batch=2)), opt_level=0)


@pytest.mark.parametrize("where,msg", [(lambda d, f: d, "is a folder"),
                                       (lambda d, f: d / "no" / "m.mlcb", "does not exist"),
                                       (lambda d, f: f / "m.mlcb", "is a file, not a folder")])
def test_save_refuses_a_path_it_cannot_write(exe, tmp_path, a_file, where, msg):
    with pytest.raises(ArtifactError, match=f"cannot write the compiled model to .*{msg}"):
        exe.save(where(tmp_path, a_file))


@pytest.mark.parametrize("sub", ["", "lib"])
def test_export_refuses_a_file_as_its_folder(exe, a_file, sub):
    with pytest.raises(ExportError, match=r"\[MLC-C008\] cannot write the C library into .*"
                                          r"is a file, not a folder"):
        exe.export(a_file / sub if sub else a_file, name="m")


@pytest.mark.parametrize("path", [None, 3, b"m.mlcb"])
def test_load_refuses_what_is_not_a_path(path):
    with pytest.raises(ArtifactError, match=rf"mb.load needs the path .*got {path!r}.*Instead"):
        mb.load(path)


@pytest.mark.parametrize("sub", ["", "site"])
def test_book_build_refuses_a_file_as_its_folder(a_file, sub):
    with pytest.raises(BookError, match="cannot write the book's site into .*is a file"):
        build(book.load(), a_file / sub if sub else a_file)


@pytest.mark.parametrize("where", [lambda d, f: d, lambda d, f: d / "missing" / "r.jsonl",
                                   lambda d, f: f / "r.jsonl"])
def test_tune_refuses_records_it_cannot_write_before_tuning(tmp_path, a_file, capsys, where):
    onnx.save(examples.mlp(batch=2), tmp_path / "mlp.onnx")
    assert main(["tune", str(tmp_path / "mlp.onnx"), "--trials", "3",
                 "-o", str(where(tmp_path, a_file))]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "[MLC-U003] cannot write the tuning records" in err


def test_tune_model_refuses_a_folder_as_its_database(tmp_path):
    mod = mb.from_onnx(examples.mlp(batch=2))
    with pytest.raises(DatabaseError, match="cannot write the tuning records to .*is a folder"):
        tune_model(mod, 1, database=tmp_path)


@pytest.mark.parametrize("command", ["compile", "export"])
def test_compile_and_export_commands_refuse_a_bad_output_before_compiling(tmp_path, a_file,
                                                                           capsys, command):
    onnx.save(examples.mlp(batch=2), tmp_path / "mlp.onnx")
    out = a_file / "x"
    assert main([command, str(tmp_path / "mlp.onnx"), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "is a file, not a folder" in err
    np.testing.assert_equal(a_file.read_text(), "x")


@pytest.mark.parametrize("name,msg", [("a\0b", "holds a NUL character, which no file name can"),
                                      ("a" * 300, "has a name of 300 bytes .*longer than the "
                                                  "255 a file system takes; Instead")])
def test_output_file_refuses_a_name_no_file_system_takes(tmp_path, name, msg):
    with pytest.raises(ArtifactError, match=rf"\[MLC-C007\] .*{msg}"):
        output_file(tmp_path / name, "the model", ArtifactError)


def test_save_and_export_refuse_a_300_character_name(exe, tmp_path):
    with pytest.raises(ArtifactError, match="name of 300 bytes"):
        exe.save(tmp_path / ("m" * 300))
    with pytest.raises(ExportError, match=r"\[MLC-C008\] the path for the C library has a "
                                          "name of 300 bytes"):
        exe.export(tmp_path / ("d" * 300), name="m")


def test_grade_refuses_a_scores_file_it_cannot_write_before_grading(tmp_path, capsys):
    missing = tmp_path / "missing" / "scores.json"
    nb = tmp_path / "01_x.ipynb"          # never run: the path is checked first
    nb.write_text("{}")
    assert main(["grade", str(nb), "--json", str(missing)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "[MLC-B001] cannot write the json scores" in err


def test_a_kernel_object_file_is_refused_a_path_it_cannot_write(tmp_path, a_file):
    from mlcbook import te
    a = te.placeholder((4,), "float32", name="A")
    kernel = mb.build(te.create_prim_func([a, te.compute((4,), lambda i: a[i] * 2, "B")]))
    with pytest.raises(ArtifactError, match="cannot write the object file to .*is a file"):
        kernel.export_object(a_file / "k.o")
