import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import GraphError, InvalidModelError, UnsupportedModelError
from mlcbook.frontend import examples
from mlcbook.graph import Constant, interpret, post_order


def make(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name, shape, t=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, t, shape)


def test_initializers_become_named_weights_owned_by_their_node():
    mod = mb.from_onnx(examples.mlp(batch=2))
    weights = mod["main"].weights
    assert weights["fc1.weight"].owner == "fc1"
    assert weights["fc2.bias"].owner == "fc2"


def test_symbolic_batch_needs_a_size():
    model = examples.mlp(batch=None)
    with pytest.raises(GraphError, match="symbolic dimension 'N' at axis 0; .*batch_size=N"):
        mb.from_onnx(model)
    mod = mb.from_onnx(model, batch_size=3)
    assert mod["main"].params[0].type.shape == (3, 784)
    mod = mb.from_onnx(model, shapes={"input": (5, 784)})
    assert mod["main"].params[0].type.shape == (5, 784)


def test_from_a_file(tmp_path):
    path = tmp_path / "m.onnx"
    onnx.save(examples.mlp(batch=1, sizes=(4, 3)), str(path))
    mod = mb.from_onnx(str(path))
    assert mod["main"].ret_type.shape == (1, 3)


def test_shape_subgraphs_are_folded_into_static_attributes():
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "zero_axes"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus_one"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero_axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    mod = mb.from_onnx(make(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 12])], inits))
    calls = mod["main"].calls()
    assert [c.op for c in calls] == ["reshape"] and calls[0].attrs["shape"] == (2, -1)


def test_shape_input_given_as_a_graph_input_needs_a_constant():
    node = helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")
    model = make([node], [vi("x", [2, 3]), vi("shape", [2], TensorProto.INT64)], [vi("y", [3, 2])])
    with pytest.raises(UnsupportedModelError, match=r"constants=\{'shape': value\}"):
        mb.from_onnx(model)
    mod = mb.from_onnx(model, constants={"shape": np.array([3, 2])})
    x = np.arange(6, dtype="float32").reshape(2, 3)
    np.testing.assert_array_equal(interpret(mod, x), x.reshape(3, 2))


def test_every_unsupported_node_is_listed_in_one_error():
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="ok"),
             helper.make_node("Bernoulli", ["a"], ["b"], name="be1"),
             helper.make_node("RandomUniformLike", ["b"], ["c"], name="ru"),
             helper.make_node("BatchNormalization", ["c", "s", "s", "s", "s"],
                              ["d", "rm", "rv"], name="bn", training_mode=1),
             helper.make_node("Gelu", ["d"], ["e"], name="g", approximate="none")]
    inits = [numpy_helper.from_array(np.ones(3, np.float32), "s")]
    model = make(nodes, [vi("x", [1, 3, 2])], [vi("e", [1, 3, 2])], inits, opset=20)
    with pytest.raises(UnsupportedModelError) as err:
        mb.from_onnx(model)
    msg = str(err.value)
    assert "4 thing(s)" in msg
    assert "output 2 ('rv') is not supported" in msg
    assert "node 'be1' (Bernoulli): the op Bernoulli is not supported" in msg
    assert "node 'ru' (RandomUniformLike)" in msg
    assert "node 'bn' (BatchNormalization): training_mode=1" in msg
    assert "Supported ops:" in msg and "Relu" in msg


def test_an_attribute_onnx_does_not_know_is_a_malformed_model():
    node = helper.make_node("LeakyRelu", ["x"], ["y"], name="r", fancy=3)
    model = make([node], [vi("x", [2])], [vi("y", [2])])
    with pytest.raises(InvalidModelError, match="Unrecognized attribute: fancy"):
        mb.from_onnx(model)


def test_an_attribute_mlcbook_does_not_know_is_reported_as_unsupported():
    from mlcbook.frontend.onnx_ops import static_problems
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1, new_in_opset_99=1)
    problems = static_problems(node, {"axis": 1, "new_in_opset_99": 1})
    assert problems == ["the attribute new_in_opset_99=1 is not supported"]


def test_unsupported_input_dtype():
    node = helper.make_node("Relu", ["x"], ["y"])
    model = make([node], [vi("x", [2], TensorProto.INT16)], [vi("y", [2], TensorProto.INT16)])
    with pytest.raises(UnsupportedModelError, match="element type INT16"):
        mb.from_onnx(model)


def test_malformed_model_gives_the_checker_message():
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"])
    model = make([node], [vi("x", [2, 3])], [vi("y", [2, 1])],
                 [numpy_helper.from_array(np.array([1], np.int64), "axes")], opset=17)
    with pytest.raises(InvalidModelError, match="ONNX checker rejects the model: .*ReduceMean"):
        mb.from_onnx(model)


def test_unreadable_file(tmp_path):
    p = tmp_path / "x.onnx"
    p.write_bytes(b"\x00garbage")
    with pytest.raises(InvalidModelError):
        mb.from_onnx(str(p))
    with pytest.raises(InvalidModelError, match="no ONNX file"):
        mb.from_onnx(str(tmp_path / "none.onnx"))


def test_opset_differences_split_reduce_clip():
    # opset 13: Split sizes and ReduceSum axes are inputs; opset 18: num_outputs
    for opset in (13, 18):
        attrs = {"num_outputs": 2} if opset == 18 else {}
        nodes = [helper.make_node("Split", ["x"], ["a", "b"], axis=1, **attrs),
                 helper.make_node("ReduceSum", ["a", "ax"], ["s"], keepdims=0),
                 helper.make_node("Clip", ["b", "lo"], ["c"])]
        inits = [numpy_helper.from_array(np.array([1], np.int64), "ax"),
                 numpy_helper.from_array(np.array(0.0, np.float32), "lo")]
        model = make(nodes, [vi("x", [2, 4])], [vi("s", [2]), vi("c", [2, 2])], inits, opset)
        x = np.array([[1, -2, 3, -4], [5, 6, -7, 8]], np.float32)
        s, c = interpret(mb.from_onnx(model), x)
        assert s.tolist() == [-1, 11] and c.tolist() == [[3, 0], [0, 8]]


def test_constant_nodes_are_anonymous():
    nodes = [helper.make_node("Constant", [], ["k"], value_float=2.0),
             helper.make_node("Mul", ["x", "k"], ["y"])]
    mod = mb.from_onnx(make(nodes, [vi("x", [2])], [vi("y", [2])]))
    consts = [n for n in post_order(mod["main"].body) if isinstance(n, Constant)]
    assert consts and not consts[0].name


def _bad_gemm(name, x, out):
    # onnx's shape inference does not check Gemm's C; mlcbook's does
    return helper.make_node("Gemm", [x, "w", "c"], [out], name=name)


_GEMM_WEIGHTS = [numpy_helper.from_array(np.ones((3, 5), np.float32), "w"),
                 numpy_helper.from_array(np.ones(7, np.float32), "c")]


def test_conversion_errors_and_unsupported_nodes_are_listed_together():
    # C has 7 values for 5 columns: both gemms fail shape inference
    nodes = [_bad_gemm("mm1", "x", "a"),
             helper.make_node("Bernoulli", ["x"], ["b"], name="be1"),
             _bad_gemm("mm2", "b2", "y2"),
             helper.make_node("Relu", ["a"], ["d"], name="after_mm1")]
    inits = _GEMM_WEIGHTS
    model = make(nodes, [vi("x", [2, 3]), vi("b2", [2, 3])], [vi("d", [2, 5]), vi("y2", [2, 5])],
                 inits)
    with pytest.raises(UnsupportedModelError) as err:
        mb.from_onnx(model)
    msg = str(err.value)
    assert "1 thing(s) mlcbook does not support" in msg
    assert "node 'be1' (Bernoulli)" in msg
    assert "2 node(s) failed to convert" in msg
    assert "node 'mm1' (Gemm)" in msg and "node 'mm2' (Gemm)" in msg
    # a node fed by a failed one is skipped, not reported again
    assert "after_mm1" not in msg


def test_several_conversion_errors_keep_their_type_and_are_all_listed():
    from mlcbook.errors import OpShapeError
    nodes = [_bad_gemm("mm1", "x", "a"), _bad_gemm("mm2", "x", "y2")]
    inits = _GEMM_WEIGHTS
    model = make(nodes, [vi("x", [2, 3])], [vi("a", [2, 5]), vi("y2", [2, 5])], inits)
    with pytest.raises(OpShapeError) as err:
        mb.from_onnx(model)
    msg = str(err.value)
    assert "2 node(s) failed to convert" in msg
    assert "node 'mm1' (Gemm)" in msg and "node 'mm2' (Gemm)" in msg


def test_a_single_conversion_error_names_its_node():
    from mlcbook.errors import OpShapeError
    inits = _GEMM_WEIGHTS
    model = make([_bad_gemm("mm1", "x", "a")], [vi("x", [2, 3])], [vi("a", [2, 5])], inits)
    with pytest.raises(OpShapeError, match=r"^\[MLC-G002\] node 'mm1' \(Gemm\): "):
        mb.from_onnx(model)


def test_an_opset_newer_than_onnx_knows_is_refused():
    m = make([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])], opset=99)
    with pytest.raises(UnsupportedModelError, match=r"opset 99, which does not exist yet"):
        mb.from_onnx(m)


@pytest.mark.parametrize("pads,ok", [([1, 2, 0, 2], True), ([0, 3, 0, 0], False),
                                     ([0, 0, 0, 3], False), ([2, 0, 0, 0], False)])
def test_pad_reflect_at_most_length_minus_one_as_onnxruntime(pads, ok):
    import onnxruntime as ort
    out = [2 + pads[0] + pads[2], 3 + pads[1] + pads[3]]
    m = make([helper.make_node("Pad", ["x", "pads"], ["y"], mode="reflect")],
             [vi("x", [2, 3])], [vi("y", out)],
             [numpy_helper.from_array(np.array(pads, "int64"), "pads")], opset=18)
    x = np.arange(6, dtype="float32").reshape(2, 3)
    if ok:
        want = ort.InferenceSession(m.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.testing.assert_array_equal(mb.compile(mb.from_onnx(m))(x), want)
    else:
        with pytest.raises(GraphError, match="mode 'reflect' pads axis .* Instead"):
            mb.from_onnx(m)


def test_max_pool_propagates_nan_in_the_reference_and_compiled_alike():
    # documented choice (numpy's): a NaN in a window gives NaN; onnxruntime skips NaN
    m = make([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
             [vi("x", [1, 1, 2, 4])], [vi("y", [1, 1, 1, 3])])
    x = np.array([[[[np.nan, 1, 2, np.inf], [0, 1, 2, 3]]]], "float32")
    mod = mb.from_onnx(m)
    got, want = mb.compile(mod)(x), interpret(mod, x)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 0, 2] == np.inf
