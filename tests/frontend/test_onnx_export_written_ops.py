"""mb.to_onnx of the declared ops whose ONNX import is written by hand (RNN, GRU, LSTM,
Attention, Resize, Range, ConstantOfShape, MaxPool's indices) and of GridSample and
AffineGrid: onnxruntime runs each export with the values of mb.compile, and mb.from_onnx
brings it back to the same values."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import Constant, Function, Tuple, TupleGetItem, Var, op
from mlcbook.ops.types import TensorType


def _round_trip(f, *args, tol=1e-5):
    """``f`` exported: onnxruntime's and the re-imported model's results against mb.compile's."""
    model = mb.to_onnx(f)
    want = mb.compile(f)(*args)
    want = want if isinstance(want, tuple) else (want,)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), args)})
    back = mb.compile(mb.from_onnx(model))(*args)
    for g, b, w in zip(got, back if isinstance(back, tuple) else (back,), want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
        np.testing.assert_allclose(b, w, rtol=tol, atol=tol)
    return model


def _attrs(node) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("cell,gates", [("rnn", 1), ("gru", 3), ("lstm", 4)])
def test_recurrent_layers_export_with_sequence_lens_before_the_states(cell, gates):
    rng, (t, b, i, h) = np.random.default_rng(0), (4, 2, 3, 5)
    x, lens = Var("x", TensorType((t, b, i))), Var("lens", TensorType((b,), "int32"))
    weights = [(2, gates * h, i), (2, gates * h, h), (2, 2 * gates * h), (2, b, h)] + \
        [(2, b, h), (2, 3 * h)] * (cell == "lstm")
    call = getattr(op, cell)(x, *(Constant(_rand(rng, *s)) for s in weights), lens,
                             direction="bidirectional", clip=2.0)
    f = Function((x, lens), Tuple([TupleGetItem(call, k) for k in range(len(call.type.fields))]))
    model = _round_trip(f, _rand(rng, t, b, i), np.array([4, 2], np.int32))
    (node,) = model.graph.node
    assert (node.op_type, node.input[4], len(node.input)) == (cell.upper(), "lens",
                                                              len(weights) + 2)


def test_recurrent_activations_export_capitalized_with_the_hidden_size():
    rng = np.random.default_rng(1)
    x = Var("x", TensorType((3, 1, 2)))
    call = op.rnn(x, *(Constant(_rand(rng, *s)) for s in ((1, 4, 2), (1, 4, 4), (1, 8),
                                                           (1, 1, 4))), activations=("relu",))
    f = Function((x,), TupleGetItem(call, 0))
    (node,) = _round_trip(f, _rand(rng, 3, 1, 2)).graph.node
    assert _attrs(node) == {"activations": [b"Relu"], "direction": b"forward",
                            "hidden_size": 4}


_Q, _KV = (2, 4, 3, 8), (2, 2, 5, 8)     # grouped-query heads: 4 of q, 2 of k and v


def _qkv(rng):
    return [Var(n, TensorType(s)) for n, s in (("q", _Q), ("k", _KV), ("v", _KV))], \
        [_rand(rng, *s) for s in (_Q, _KV, _KV)]


@pytest.mark.parametrize("opset,attrs,counts", [
    (23, {"is_causal": 1, "scale": 0.3, "softcap": 2.0}, False),
    (24, {"is_causal": 1}, True),                   # nonpad_kv_seqlen came with opset 24
    (25, {"left_window_size": 1, "softmax_precision": "float64"}, False)])
def test_attention_exports_at_the_first_opset_of_its_form(opset, attrs, counts):
    rng = np.random.default_rng(2)
    params, args = _qkv(rng)
    if counts:
        params.append(Var("n", TensorType((2,), "int64")))
        args.append(np.array([5, 3], np.int64))
    model = _round_trip(Function(params, op.attention(*params, **attrs)), *args)
    assert model.opset_import[0].version == opset
    assert list(model.graph.node[0].input) == ["q", "k", "v"] + ["", "", "", "n"] * counts


def test_attention_mask_is_input_3_and_its_probabilities_output_3():
    rng = np.random.default_rng(3)
    params, args = _qkv(rng)
    params.append(Var("mask", TensorType((3, 5), "bool")))
    args.append(rng.random((3, 5)) > 0.3)
    call = op.attention(*params, has_mask=1, num_outputs=2, qk_matmul_output_mode=3)
    model = _round_trip(Function(params, Tuple([TupleGetItem(call, 0),
                                                TupleGetItem(call, 1)])), *args)
    (node,) = model.graph.node
    assert node.input[3] == "mask"
    assert [o.name for o in model.graph.output] == [node.output[0], node.output[3]]


def test_attention_with_cached_keys_is_refused_with_what_to_do():
    params, _ = _qkv(np.random.default_rng(4))
    f = Function(params, op.attention(*params, is_causal=1, past_length=2))
    with pytest.raises(UnsupportedModelError, match=r"attention 'attention' has past_length=2"
                                                    r", keys cached.*Instead: export"):
        mb.to_onnx(f)


@pytest.mark.parametrize("opset,inputs,sizes,scales,attrs", [
    (17, 3, (1, 2, 7, 6), (1, 1, 1.5, 1.5), {"mode": "linear"}),         # scales: input 2
    (17, 4, (1, 2, 7, 6), (1, 1, 7 / 5, 1.5), {"mode": "cubic"}),        # sizes: input 3
    (17, 4, (1, 2, 3, 3), (1, 1, 0.6, 0.75), {
        "mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
        "roi": ((0, 1), (0, 1), (0.2, 0.8), (0.1, 0.9)), "extrapolation_value": 2.0}),
    (18, 4, (1, 2, 2, 2), (1, 1, 0.4, 0.5), {"mode": "linear", "antialias": 1}),
    (19, 4, (1, 2, 10, 8), (1, 1, 2, 2), {"coordinate_transformation_mode":
                                          "half_pixel_symmetric", "nearest_mode": "ceil"})])
def test_resize_exports_its_sizes_or_its_scales(opset, inputs, sizes, scales, attrs):
    x = Var("x", TensorType((1, 2, 5, 4)))
    f = Function((x,), op.resize(x, sizes=sizes, scales=scales, **attrs))
    model = _round_trip(f, _rand(np.random.default_rng(5), 1, 2, 5, 4))
    assert model.opset_import[0].version == opset
    (node,) = model.graph.node
    assert len(node.input) == inputs and node.input[1] == ("resize_roi" if "roi" in attrs
                                                           else "")


def test_resize_whose_scales_do_not_give_its_sizes_is_refused_with_what_to_do():
    x = Var("x", TensorType((1, 2, 5, 4)))
    f = Function((x,), op.resize(x, sizes=(1, 2, 9, 4), scales=(1, 1, 1.5, 1)))
    with pytest.raises(UnsupportedModelError, match=r"resize 'resize': scales=\(1, 1, 1.5, 1\)"
                                                    r" neither give the sizes.*Instead: give"):
        mb.to_onnx(f)


def test_grid_sample_exports_at_opset_20_whose_mode_names_are_its_own():
    rng = np.random.default_rng(6)
    x, grid = Var("x", TensorType((2, 3, 4, 5))), Var("grid", TensorType((2, 6, 7, 2)))
    f = Function((x, grid), op.grid_sample(x, grid, mode="cubic", padding_mode="reflection"))
    model = _round_trip(f, _rand(rng, 2, 3, 4, 5),
                        rng.uniform(-1.5, 1.5, (2, 6, 7, 2)).astype(np.float32), tol=1e-4)
    assert model.opset_import[0].version == 20
    assert _attrs(model.graph.node[0])["mode"] == b"cubic"


def test_affine_grid_exports_its_size_as_input_1():
    theta = Var("theta", TensorType((2, 2, 3)))
    model = _round_trip(Function((theta,), op.affine_grid(theta, size=(2, 3, 6, 7),
                                                          align_corners=1)),
                        _rand(np.random.default_rng(9), 2, 2, 3))
    assert list(model.graph.node[0].input) == ["theta", "affine_grid_size"]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_of_opset_16_imports_its_mode_names(mode):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 1, 4, 4)),
                      helper.make_tensor_value_info("grid", TensorProto.FLOAT, (1, 3, 2, 2))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 1, 3, 2))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    rng = np.random.default_rng(7)
    xv, gv = _rand(rng, 1, 1, 4, 4), rng.uniform(-1.2, 1.2, (1, 3, 2, 2)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"x": xv, "grid": gv})[0]
    np.testing.assert_allclose(mb.compile(mb.from_onnx(model))(xv, gv), want, rtol=1e-5,
                               atol=1e-5)


def test_range_and_constant_of_shape_export_their_values_in_their_dtypes():
    x = Var("x", TensorType((3,), "int32"))
    f = Function((x,), Tuple([op.add(op.range(start=1, limit=10, delta=3, dtype="int32"), x),
                              op.constant_of_shape(shape=(2, 3), value=2.5, dtype="float64"),
                              op.constant_of_shape(shape=(2,), value=True, dtype="bool")]))
    model = _round_trip(f, np.array([3, -1, 0], np.int32))
    assert [n.op_type for n in model.graph.node] == ["Range", "Add", "ConstantOfShape",
                                                     "ConstantOfShape"]
    assert {i.name: i.data_type for i in model.graph.initializer} == {
        "range_start": TensorProto.INT32, "range_limit": TensorProto.INT32,
        "range_delta": TensorProto.INT32, "constant_of_shape_shape": TensorProto.INT64,
        "constant_of_shape_1_shape": TensorProto.INT64}


def test_low_bit_constant_of_shape_exports_at_opset_21():
    # (onnxruntime has no ConstantOfShape of float8: the import brings the value back)
    f = Function((), op.constant_of_shape(shape=(2,), value=1.5, dtype="float8_e4m3fn"))
    model = mb.to_onnx(f)
    assert model.opset_import[0].version == 21
    assert model.graph.node[0].attribute[0].t.data_type == TensorProto.FLOAT8E4M3FN
    got = mb.compile(mb.from_onnx(model))()
    np.testing.assert_array_equal(got.astype(np.float32), [1.5, 1.5])


def test_max_pool_indices_export_as_max_pools_second_output():
    x = Var("x", TensorType((1, 2, 5, 6)))
    window = {"kernel_shape": (2, 3), "strides": (2, 1), "pads": (1, 0, 0, 1)}
    f = Function((x,), Tuple([op.max_pool(x, **window),
                               op.max_pool_indices(x, storage_order=1, **window)]))
    model = _round_trip(f, _rand(np.random.default_rng(8), 1, 2, 5, 6))
    pool, indices = model.graph.node
    assert (pool.op_type, indices.op_type, _attrs(indices)["storage_order"]) == (
        "MaxPool", "MaxPool", 1)
    assert [o.name for o in model.graph.output] == [pool.output[0], indices.output[1]]
