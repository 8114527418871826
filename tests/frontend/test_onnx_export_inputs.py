"""mb.to_onnx of ops whose ONNX attributes are inputs of other forms (``OnnxInput``): one
number (Clip's bounds, Trilu's k, TopK's K, CumSum's axis), sizes (Split), pads with their
constant (Pad); and the one opset of a model, whose nodes all take its form (ReduceMax's
axes are an attribute at opset 17 and an input from 18). Each exported model runs in
onnxruntime and imports back to the same values."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

import mlcbook as mb
from mlcbook.graph import Function, Tuple, Var, op
from mlcbook.ops.types import TensorType


def _ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})


def _round_trip(f, x, nodes):
    """The exported model's nodes (op type, inputs given) are ``nodes``; onnxruntime and the
    model imported back compute ``f``'s values."""
    model = mb.to_onnx(f)
    assert [(n.op_type, sum(bool(i) for i in n.input)) for n in model.graph.node] == nodes
    want = mb.graph.interpret(f, x)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    for got, w in zip(_ort(model, x), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    back = mb.compile(mb.from_onnx(model))(x)
    for got, w in zip(back if isinstance(back, (tuple, list)) else [back], want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
    return model


def _x(shape, dtype="float32"):
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def test_clip_exports_its_bounds_as_inputs_of_the_datas_type():
    x = Var("x", TensorType((3, 4)))
    model = _round_trip(Function([x], op.clip(x, min=-0.5, max=0.25)), _x((3, 4)),
                        [("Clip", 3)])
    assert {i.data_type for i in model.graph.initializer} == {1}   # float32, as the data


def test_clip_with_one_bound_leaves_the_other_input_out():
    x = Var("x", TensorType((5,), "int32"))
    model = _round_trip(Function([x], op.clip(x, max=3)), np.arange(5, dtype="int32") * 2 - 3,
                        [("Clip", 2)])
    assert list(model.graph.node[0].input[1:]) == ["", "clip_max"]


def test_trilu_topk_and_cumsum_export_their_numbers_as_inputs():
    x = Var("x", TensorType((4, 5)))
    top = op.topk(x, k=2, axis=1, largest=0)
    f = Function([x], Tuple([op.trilu(x, upper=0, k=1), top[0], top[1],
                             op.cumsum(x, axis=1, reverse=1)]))
    _round_trip(f, _x((4, 5)), [("Trilu", 2), ("TopK", 2), ("CumSum", 2)])


def test_split_exports_its_sizes_and_one_output_a_piece():
    x = Var("x", TensorType((2, 7)))
    _round_trip(Function([x], op.split(x, axis=1, sizes=(3, 4))), _x((2, 7)), [("Split", 2)])


def test_pad_exports_its_pads_and_constant():
    x = Var("x", TensorType((2, 3)))
    f = Function([x], op.pad(x, pads=(1, 0, 0, 2), value=7.0))
    model = _round_trip(f, _x((2, 3)), [("Pad", 3)])
    assert model.graph.node[0].attribute[0].s == b"constant"


def _node(op_type, inputs, attrs, x, outputs, opset=18):
    """A one-node model of ``op_type`` over ``x`` whose extra inputs are initializers (None:
    left out) and whose outputs have the shapes ``outputs``."""
    from onnx import TensorProto, helper, numpy_helper
    names = ["x"] + [f"in{k}" if v is not None else "" for k, v in enumerate(inputs, 1)]
    inits = [numpy_helper.from_array(np.asarray(v), f"in{k}")
             for k, v in enumerate(inputs, 1) if v is not None]
    outs = [f"y{k}" for k in range(len(outputs))]
    graph = helper.make_graph(
        [helper.make_node(op_type, names, outs, **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
         for n, s in zip(outs, outputs)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def test_pad_imports_its_axes_input_as_pads_of_every_axis():
    x = _x((2, 3, 4))
    model = _node("Pad", [np.array([1, 2, 0, 1], np.int64), np.array(5.0, np.float32),
                          np.array([2, 0], np.int64)], {"mode": "constant"}, x, [(5, 3, 5)])
    (want,) = _ort(model, x)
    np.testing.assert_array_equal(mb.compile(mb.from_onnx(model))(x), want)


def test_split_imports_num_outputs_as_ceil_sized_pieces():
    x = _x((2, 7))
    model = _node("Split", [], {"axis": 1, "num_outputs": 3}, x, [(2, 3), (2, 3), (2, 1)])
    got = mb.compile(mb.from_onnx(model))(x)
    for g, w in zip(got, _ort(model, x)):
        np.testing.assert_array_equal(g, w)


def test_a_bound_of_more_than_one_value_is_refused_naming_the_input():
    model = _node("Clip", [np.array([0.0, 1.0], np.float32)], {}, _x((3,)), [(3,)])
    with pytest.raises(mb.errors.UnsupportedModelError, match="min.*one value"):
        mb.from_onnx(model)


def test_reduce_axes_are_an_attribute_at_opset_17():
    x = Var("x", TensorType((2, 8)))
    model = _round_trip(Function([x], op.max(x, axes=(1,), keepdims=1)), _x((2, 8)),
                        [("ReduceMax", 1)])
    assert model.opset_import[0].version == 17
    assert [a.name for a in model.graph.node[0].attribute] == ["axes", "keepdims"]


def test_a_newer_op_moves_every_node_to_its_opset_and_reduce_axes_to_inputs():
    x = Var("x", TensorType((2, 8)))
    f = Function([x], op.min(op.gelu(x), axes=(1,), keepdims=0))
    model = _round_trip(f, _x((2, 8)), [("Gelu", 1), ("ReduceMin", 2)])
    assert model.opset_import[0].version == 20
    assert [a.name for a in model.graph.node[1].attribute] == ["keepdims"]


def test_sum_exports_as_reduce_sum_with_its_axes_input():
    x = Var("x", TensorType((2, 3, 4)))
    _round_trip(Function([x], Tuple([op.sum(x, axes=(0, 2), keepdims=0),
                                     op.sum(x, keepdims=1)])), _x((2, 3, 4)),
                [("ReduceSum", 2), ("ReduceSum", 1)])
