"""`mlcbook compile` and `mlcbook run`: any supported ONNX model to a .mlcb file and back,
checked against onnxruntime; every user mistake is one clear error line and exit code 1."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from mlcbook import models
from mlcbook.cli import main
from mlcbook.frontend import examples


def _ort(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _error(capsys, argv, command) -> str:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    line = captured.err.strip()
    assert line.startswith(f"mlcbook {command}: error: [MLC-"), line
    return line


@pytest.fixture(scope="module")
def convnet(tmp_path_factory):
    """The shipped model compiled for batch 3 by the CLI, with an input file."""
    d = tmp_path_factory.mktemp("convnet")
    onnx_path = models.save_tiny_convnet(d / "tiny.onnx")
    assert main(["compile", str(onnx_path), "-o", str(d / "tiny.mlcb"), "--batch-size", "3"]) == 0
    x = models.sample_input(3, seed=5)
    np.save(d / "x.npy", x)
    return d, x


def test_compile_then_run_matches_onnxruntime(convnet, capsys):
    d, x = convnet
    assert main(["run", str(d / "tiny.mlcb"), "--input", str(d / "x.npy"),
                 "--output", str(d / "y.npy")]) == 0
    out = capsys.readouterr().out
    assert "probs: shape (3, 10), float32" in out and f"wrote {d / 'y.npy'}" in out
    y = np.load(d / "y.npy")
    expected, = _ort(models.tiny_convnet(), {"image": x})
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)


def test_run_accepts_inputs_by_name_and_adds_the_suffix(convnet, capsys):
    d, x = convnet
    assert main(["run", str(d / "tiny.mlcb"), "-i", f"image={d / 'x.npy'}",
                 "-o", str(d / "named")]) == 0
    assert f"wrote {d / 'named.npy'}" in capsys.readouterr().out
    expected, = _ort(models.tiny_convnet(), {"image": x})
    np.testing.assert_allclose(np.load(d / "named.npy"), expected, rtol=1e-4, atol=1e-5)


def test_compile_reports_kernels_and_shapes(tmp_path, capsys):
    model = examples.mlp(batch=4, sizes=(16, 8, 3))
    onnx.save(model, tmp_path / "mlp.onnx")
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(tmp_path / "mlp.mlcb")]) == 0
    out = capsys.readouterr().out
    assert "inputs:  input (4, 16) float32" in out and "outputs: (4, 3) float32" in out
    assert "2 kernels" in out and "mlp.mlcb" in out  # gemm+relu fused, then gemm


def test_a_model_with_two_inputs_and_two_outputs(tmp_path, capsys):
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"], name="add"),
             helper.make_node("Mul", ["a", "b"], ["prod"], name="mul")]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", 5])
                       for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["B", 5]) for n in ("sum", "prod")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "two.onnx")
    assert main(["compile", str(tmp_path / "two.onnx"), "-o", str(tmp_path / "two.mlcb"),
                 "--shape", "a=2,5", "--shape", "b=2,5"]) == 0
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 2, 5), dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    # b by name, a by position
    assert main(["run", str(tmp_path / "two.mlcb"), "-i", f"b={tmp_path / 'b.npy'}",
                 "-i", str(tmp_path / "a.npy"), "-o", str(tmp_path / "out.npz")]) == 0
    assert "2 arrays sum, prod" in capsys.readouterr().out
    with np.load(tmp_path / "out.npz") as z:  # keyed by the ONNX output names
        got = [z["sum"], z["prod"]]
    for g, e in zip(got, _ort(model, {"a": a, "b": b})):
        np.testing.assert_allclose(g, e, rtol=1e-6)


# --- compile: errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("command,extra", [("compile", []), ("export", []),
                                           ("tune", ["--trials", "1"])])
def test_symbolic_batch_asks_for_batch_size(tmp_path, capsys, command, extra):
    # a compiled file, an exported library and tuned kernels have static shapes
    path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    out = tmp_path / "out"
    line = _error(capsys, [command, path, "-o", str(out), *extra], command)
    assert line.startswith(f"mlcbook {command}: error: [MLC-G010] input 'image' has the "
                           "symbolic dimension 'N' at axis 0 (shape (N, 1, 28, 28)); "
                           f"`mlcbook {command}` makes code for static shapes: pass "
                           "--batch-size N"), line
    assert not out.exists()


def test_symbolic_inner_dimension_asks_for_shape(tmp_path, capsys):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "T"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "T"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    line = _error(capsys, ["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.mlcb"),
                           "--batch-size", "2"], "compile")
    assert "[MLC-G010] input 'x' has the symbolic dimension 'T' at axis 1" in line
    assert "pass --shape x=2,D" in line


def test_unsupported_ops_are_all_listed(tmp_path, capsys):
    nodes = [helper.make_node("Bernoulli", ["x"], ["h"], name="be"),
             helper.make_node("Relu", ["h"], ["r"], name="ok"),
             helper.make_node("BatchNormalization", ["r", "s", "b", "m", "v"], ["y", "rm", "rv"],
                              name="bn", training_mode=1)]
    inits = [onnx.numpy_helper.from_array(np.ones(3, np.float32), n) for n in "sbmv"]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 4, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.mlcb")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mlcbook compile: error: [MLC-G006]") and "Traceback" not in err
    assert "node 'be' (Bernoulli): the op Bernoulli is not supported" in err
    assert "node 'bn' (BatchNormalization): training_mode=1 is not supported" in err


def test_missing_model_file(tmp_path, capsys):
    line = _error(capsys, ["compile", str(tmp_path / "no.onnx"), "-o", str(tmp_path / "o")],
                  "compile")
    assert "[MLC-G007] no ONNX file at" in line


def test_a_file_that_is_not_onnx(tmp_path, capsys):
    (tmp_path / "junk.onnx").write_bytes(b"\x00\x01 not a protobuf \xff" * 10)
    line = _error(capsys, ["compile", str(tmp_path / "junk.onnx"), "-o", str(tmp_path / "o")],
                  "compile")
    assert "[MLC-G007]" in line and "junk.onnx" in line


@pytest.mark.parametrize("args, message", [
    (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["--shape", "image"], "--shape 'image' is not NAME=D1,D2,..."),
    (["--shape", "image=2,x"], "--shape 'image=2,x' is not NAME=D1,D2,..."),
    (["--shape", "nope=1,2"],
     "--shape names 'nope', which is not an input of the model; its inputs are: image"),
])
def test_bad_compile_options(tmp_path, capsys, args, message):
    path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    line = _error(capsys, ["compile", path, "-o", str(tmp_path / "t.mlcb")] + args, "compile")
    assert message in line


def test_unwritable_output(tmp_path, capsys):
    model = examples.mlp(batch=1, sizes=(4, 2))
    onnx.save(model, tmp_path / "mlp.onnx")
    line = _error(capsys, ["compile", str(tmp_path / "mlp.onnx"), "-o",
                           str(tmp_path / "no" / "such" / "dir.mlcb")], "compile")
    assert "cannot write" in line and "check that its folder exists" in line


# --- run: errors ---------------------------------------------------------------------------------
def test_run_wrong_batch_says_how_to_recompile(convnet, tmp_path, capsys):
    d, _ = convnet
    np.save(tmp_path / "x5.npy", models.sample_input(5))
    line = _error(capsys, ["run", str(d / "tiny.mlcb"), "-i", str(tmp_path / "x5.npy")], "run")
    assert "has the shape (3, 1, 28, 28) it was compiled for" in line
    assert "holds (5, 1, 28, 28)" in line and "compile again with --batch-size 5" in line


def test_run_wrong_dtype(convnet, tmp_path, capsys):
    d, x = convnet
    np.save(tmp_path / "x64.npy", x.astype(np.float64))
    line = _error(capsys, ["run", str(d / "tiny.mlcb"), "-i", str(tmp_path / "x64.npy")], "run")
    assert "input 'image' expects dtype float32 but got float64" in line


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "no input file"),
    (lambda p: p.write_bytes(b"hello"), "it is not a .npy file"),
    (lambda p: np.savez(p, a=np.zeros(2)), "is an .npz archive of several arrays"),
])
def test_run_bad_input_file(convnet, tmp_path, capsys, make, message):
    d, _ = convnet
    p = tmp_path / "in.npy"
    make(p)
    if p.with_suffix(".npy.npz").exists():  # np.savez appends .npz
        p.with_suffix(".npy.npz").rename(p)
    line = _error(capsys, ["run", str(d / "tiny.mlcb"), "-i", str(p)], "run")
    assert message in line


def test_run_too_many_inputs(convnet, capsys):
    d, _ = convnet
    x = str(d / "x.npy")
    line = _error(capsys, ["run", str(d / "tiny.mlcb"), "-i", x, "-i", x], "run")
    assert "takes 1 input(s) (image), got 2" in line


def test_run_unknown_input_name(convnet, capsys):
    d, _ = convnet
    line = _error(capsys, ["run", str(d / "tiny.mlcb"), "-i", f"imgae={d / 'x.npy'}"], "run")
    assert "has no input named 'imgae'; its inputs are: image" in line


def test_run_missing_or_bad_artifact(tmp_path, capsys, convnet):
    d, _ = convnet
    x = str(d / "x.npy")
    assert "no compiled model at" in _error(
        capsys, ["run", str(tmp_path / "none.mlcb"), "-i", x], "run")
    (tmp_path / "fake.mlcb").write_text("not a zip")
    assert "is not an mlcbook compiled model" in _error(
        capsys, ["run", str(tmp_path / "fake.mlcb"), "-i", x], "run")


def test_errors_from_the_shell_have_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mlcbook", "compile", str(tmp_path / "x.onnx"),
                           "-o", str(tmp_path / "x.mlcb")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.startswith("mlcbook compile: error: [MLC-G007] no ONNX file at")
    assert "Traceback" not in proc.stderr


def test_run_on_big_endian_input_gives_the_native_answer(convnet, capsys):
    # '>f4' passes the dtype check as float32: it must be converted, not read as garbage
    d, x = convnet
    np.save(d / "x_be.npy", x.astype(">f4"))
    for name in ("x", "x_be"):
        assert main(["run", str(d / "tiny.mlcb"), "--input", str(d / f"{name}.npy"),
                     "--output", str(d / f"y_{name}.npy")]) == 0
    capsys.readouterr()
    native, big = np.load(d / "y_x.npy"), np.load(d / "y_x_be.npy")
    assert np.isfinite(big).all()
    np.testing.assert_array_equal(big, native)
