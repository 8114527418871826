"""mb.to_onnx: exported models run in onnxruntime with mlcbook's results."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import Function, Var, op
from mlcbook.ops.types import TensorType


def run_ort(model, *inputs):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


@pytest.mark.parametrize("build", [lambda: mb.train.mlp((64, 32, 10), batch=4),
                                   lambda: mb.train.cnn(batch=2, channels=(4, 8))])
def test_models_run_in_onnxruntime(build):
    func = build()
    x = np.random.default_rng(0).random(func.params[0].shape).astype(np.float32)
    (got,) = run_ort(mb.to_onnx(func), x)
    np.testing.assert_allclose(got, mb.graph.interpret(func, x), rtol=1e-4, atol=1e-5)
    back = mb.from_onnx(mb.to_onnx(func))
    np.testing.assert_allclose(mb.graph.interpret(back, x), got, rtol=1e-4, atol=1e-5)


def test_more_ops():
    x = Var("x", TensorType((2, 3, 4)))
    body = op.softmax(op.transpose(op.reshape(op.sum(op.mul(x, x), axes=(2,), keepdims=1),
                                              shape=(3, 2)), perm=(1, 0)), axis=1)
    f = Function((x,), op.cast(op.mean(body, axes=(1,), keepdims=0), dtype="float64"))
    xv = np.random.default_rng(1).random((2, 3, 4)).astype(np.float32)
    (got,) = run_ort(mb.to_onnx(f), xv)
    np.testing.assert_allclose(got, mb.graph.interpret(f, xv), rtol=1e-5)


def test_unsupported_op_is_named():
    x = Var("x", TensorType((4,)))
    with pytest.raises(UnsupportedModelError, match="'trilu'"):
        mb.to_onnx(Function((x,), op.trilu(op.reshape(x, shape=(2, 2)))))


def test_declared_reductions_and_transpose_export_under_their_onnx_names():
    x = Var("x", TensorType((3, 4)))
    f = Function((x,), mb.graph.Tuple([
        op.argmax(x, axis=1, keepdims=0, select_last_index=1), op.prod(x, axes=(0,)),
        op.max(op.transpose(x), axes=(1,), keepdims=0)]))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["ArgMax", "ReduceProd", "Transpose",
                                                     "ReduceMax"]
    xv = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [4, 0, 4, 1]], np.float32)
    got = run_ort(model, xv)
    assert got[0].tolist() == [2, 3, 2]                     # the last of the ties
    np.testing.assert_allclose(got[1], xv.prod(0, keepdims=True))
    np.testing.assert_allclose(got[2], xv.max(0))


def test_declared_gathers_concat_and_flatten_export_under_their_onnx_names():
    x, i = Var("x", TensorType((2, 3, 4))), Var("i", TensorType((2, 1, 2), "int64"))
    j = Var("j", TensorType((2,), "int32"))
    f = Function((x, i, j), mb.graph.Tuple([
        op.concat(op.gather(x, j, axis=2), x, axis=-1),
        op.gather_elements(x, i, axis=1),
        op.flatten(op.gather_nd(x, i, batch_dims=1), axis=1)]))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["Gather", "Concat", "GatherElements",
                                                     "GatherND", "Flatten"]
    xv = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    iv, jv = np.array([[[1, -1]], [[2, 0]]], np.int64), np.array([3, -4], np.int32)
    want = mb.graph.interpret(f, xv, iv, jv)
    assert want[0].shape == (2, 3, 6)
    for got, w in zip(run_ort(model, xv, iv, jv), want):
        np.testing.assert_array_equal(got, w)
    back = mb.from_onnx(model)
    assert {c.op for c in back["main"].calls()} == {"gather", "concat", "gather_elements",
                                                   "gather_nd", "flatten"}
    for got, w in zip(mb.compile(back)(xv, iv, jv), want):
        np.testing.assert_array_equal(got, w)


def test_declared_convolutions_normalization_and_matmul_export_under_their_onnx_names():
    x = Var("x", TensorType((1, 2, 5, 5)))
    rng = np.random.default_rng(2)

    def const(*shape, positive=False):
        v = rng.standard_normal(shape).astype(np.float32)
        return mb.graph.Constant(np.abs(v) + 0.5 if positive else v)

    y = op.conv_transpose(x, const(2, 3, 3, 3), const(3), strides=(2, 2), pads=(1, 1, 0, 0),
                          output_padding=(1, 1))
    y = op.batch_norm(op.conv(y, const(4, 3, 2, 2), pads=(1, 0, 0, 1)), const(4), const(4),
                      const(4), const(4, positive=True), epsilon=1e-3)
    f = Function((x,), op.matmul(y, const(11, 3)))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["ConvTranspose", "Conv",
                                                     "BatchNormalization", "MatMul"]
    xv = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    want = mb.graph.interpret(f, xv)
    (got,) = run_ort(model, xv)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    back = mb.from_onnx(model)
    np.testing.assert_allclose(mb.compile(back)(xv), want, rtol=1e-4, atol=1e-4)
