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
    x = Var("x", TensorType((1, 32, 4, 4)))
    with pytest.raises(UnsupportedModelError, match="'to_blocked'"):
        mb.to_onnx(Function((x,), op.to_blocked(x, block=16)))


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



def _const(rng, *shape):
    return mb.graph.Constant(rng.standard_normal(shape).astype(np.float32))


def _attrs(node) -> dict:
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def test_gemm_exports_its_flags_under_onnx_names_and_imports_back():
    rng = np.random.default_rng(3)
    a = Var("a", TensorType((4, 3)))
    y = op.gemm(a, _const(rng, 5, 4), _const(rng, 5), trans_a=1, trans_b=1, alpha=0.5)
    f = Function((a,), op.maximum(y, op.minimum(_const(rng, 1, 5), _const(rng, 5))))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["Gemm", "Min", "Max"]
    assert _attrs(model.graph.node[0]) == {"alpha": 0.5, "beta": 1.0, "transA": 1, "transB": 1}
    av = rng.standard_normal((4, 3)).astype(np.float32)
    (got,) = run_ort(model, av)
    np.testing.assert_allclose(got, mb.graph.interpret(f, av), rtol=1e-5, atol=1e-6)
    (back,) = [c for c in mb.from_onnx(model)["main"].calls() if c.op == "gemm"]
    assert (back.attrs["trans_a"], back.attrs["trans_b"], back.attrs["alpha"]) == (1, 1, 0.5)


def test_gemm_of_panel_packed_weights_is_refused_with_what_to_do():
    a = Var("a", TensorType((2, 4)))
    b = mb.graph.Constant(np.zeros((2, 4, 3), np.float32))
    with pytest.raises(UnsupportedModelError, match=r"gemm 'gemm' has b_panel=3, panel-packed "
                                                    r"weights.*Instead: export the graph before"):
        mb.to_onnx(Function((a,), op.gemm(a, b, b_panel=3)))


def test_layer_norm_exports_its_statistics_as_the_nodes_outputs():
    rng = np.random.default_rng(4)
    x = Var("x", TensorType((2, 3, 4)))
    stats = op.layer_norm(x, _const(rng, 4), _const(rng, 4), axis=-1, epsilon=0.5,
                          num_outputs=3)
    f = Function((x,), mb.graph.Tuple([mb.graph.TupleGetItem(stats, k) for k in range(3)]))
    model = mb.to_onnx(f)
    (node,) = model.graph.node
    assert (node.op_type, len(node.output), _attrs(node)) == ("LayerNormalization", 3,
                                                              {"axis": -1, "epsilon": 0.5})
    xv = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for got, want in zip(run_ort(model, xv), mb.graph.interpret(f, xv)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    (back,) = mb.from_onnx(model)["main"].calls()
    assert back.attrs["num_outputs"] == 3


def test_average_pool_with_dilations_exports_at_the_first_opset_that_has_them():
    x = Var("x", TensorType((1, 2, 7, 7)))
    f = Function((x,), op.avg_pool(x, kernel_shape=(2, 2), dilations=(2, 2), pads=(1, 0, 0, 1),
                                   count_include_pad=1))
    model = mb.to_onnx(f)
    assert model.opset_import[0].version == 19
    assert _attrs(model.graph.node[0])["dilations"] == [2, 2]
    xv = np.random.default_rng(5).standard_normal((1, 2, 7, 7)).astype(np.float32)
    (got,) = run_ort(model, xv)
    np.testing.assert_allclose(got, mb.graph.interpret(f, xv), rtol=1e-5, atol=1e-6)
    assert mb.to_onnx(Function((x,), op.avg_pool(x, kernel_shape=(2, 2)))).opset_import[
        0].version == 17


def test_rotary_embedding_exports_as_the_4d_rotary_embedding_of_opset_23():
    x, cos, sin = (Var(n, TensorType(s)) for n, s in (("x", (1, 2, 3, 8)), ("cos", (1, 3, 2)),
                                                        ("sin", (1, 3, 2))))
    f = Function((x, cos, sin), op.rotary_embedding(x, cos, sin, interleaved=1,
                                                    rotary_embedding_dim=4))
    model = mb.to_onnx(f)
    assert model.opset_import[0].version == 23
    assert [n.op_type for n in model.graph.node] == ["RotaryEmbedding"]
    rng = np.random.default_rng(6)
    args = [rng.standard_normal(v.type.shape).astype(np.float32) for v in (x, cos, sin)]
    (got,) = run_ort(model, *args)
    want = mb.graph.interpret(f, *args)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(mb.graph.interpret(mb.from_onnx(model), *args), want)


def test_lrn_exports_as_lrn_and_imports_back():
    x = Var("x", TensorType((1, 5, 3, 3)))
    f = Function((x,), op.lrn(x, size=3, alpha=0.25, beta=0.5, bias=2.0))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["LRN"]
    assert _attrs(model.graph.node[0]) == {"size": 3, "alpha": 0.25, "beta": 0.5, "bias": 2.0}
    xv = np.random.default_rng(7).standard_normal((1, 5, 3, 3)).astype(np.float32)
    (got,) = run_ort(model, xv)
    want = mb.graph.interpret(f, xv)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mb.graph.interpret(mb.from_onnx(model), xv), want)


def test_attributes_onnx_gives_as_inputs_export_as_initializers_and_import_back():
    x = Var("x", TensorType((2, 1, 6)))
    y = op.slice(op.squeeze(op.unsqueeze(x, axes=(0,)), axes=(0, 2)), starts=(5,), ends=(0,),
                 axes=(1,), steps=(-2,))
    f = Function((x,), mb.graph.Tuple([op.reshape(y, shape=(-1, 3)), op.slice(x, starts=(1,),
                                                                                ends=(4,))]))
    model = mb.to_onnx(f)
    assert [(n.op_type, len(n.input)) for n in model.graph.node] == [
        ("Unsqueeze", 2), ("Squeeze", 2), ("Slice", 5), ("Reshape", 2), ("Slice", 3)]
    assert list(model.graph.node[2].input[3:]) == ["slice_axes", "slice_steps"]
    xv = np.arange(12, dtype=np.float32).reshape(2, 1, 6)
    want = mb.graph.interpret(f, xv)
    for got, w in zip(run_ort(model, xv), want):
        np.testing.assert_array_equal(got, w)
    back = mb.from_onnx(model)
    assert [c.op for c in back["main"].calls()] == ["unsqueeze", "squeeze", "slice", "reshape",
                                                    "slice"]
    for got, w in zip(mb.compile(back)(xv), want):
        np.testing.assert_array_equal(got, w)


def test_expand_and_tile_export_their_counts_as_inputs():
    x = Var("x", TensorType((2, 1)))
    f = Function((x,), op.tile(op.expand(x, shape=(3, 2, 4)), repeats=(1, 2, 1)))
    model = mb.to_onnx(f)
    assert [(n.op_type, list(n.input[1:])) for n in model.graph.node] == [
        ("Expand", ["expand_shape"]), ("Tile", ["tile_repeats"])]
    xv = np.array([[1.0], [2.0]], np.float32)
    (got,) = run_ort(model, xv)
    np.testing.assert_array_equal(got, np.tile(np.broadcast_to(xv, (3, 2, 4)), (1, 2, 1)))
    np.testing.assert_array_equal(mb.compile(mb.from_onnx(model))(xv), got)
