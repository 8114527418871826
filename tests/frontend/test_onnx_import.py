import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import (ArgumentError, DynamicShapeError, GraphError, InvalidModelError,
                           UnsupportedModelError)
from mlcbook.frontend import examples
from mlcbook.graph import Constant, IRModule, SymbolicBatchModule, interpret, post_order


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


def test_batch_size_or_shapes_fix_a_symbolic_batch():
    model = examples.mlp(batch=None, sizes=(6, 3))
    mod = mb.from_onnx(model, batch_size=3)
    assert type(mod) is IRModule and mod["main"].params[0].type.shape == (3, 6)
    mod = mb.from_onnx(model, shapes={"input": (5, 6)})
    assert type(mod) is IRModule and mod["main"].params[0].type.shape == (5, 6)


def test_symbolic_batch_imports_at_batch_one_and_specializes():
    mod = mb.from_onnx(examples.mlp(batch=None, sizes=(6, 3)))
    assert isinstance(mod, SymbolicBatchModule)
    assert (mod.batch_dim, mod.batch_inputs) == ("N", ("input",))
    assert mod["main"].params[0].type.shape == (1, 6)
    four = mod.specialize(4)
    assert four["main"].params[0].type.shape == (4, 6) and four["main"].ret_type.shape == (4, 3)
    assert "batch 'N' of 'input', shown at 1" in repr(mod)


def test_specialize_reimports_shape_subgraphs_at_the_new_batch():
    # Reshape(x, Concat(Shape(x)[:1], [-1])): the folded target shape holds the batch size
    nodes = [helper.make_node("Shape", ["x"], ["s"], end=1),
             helper.make_node("Concat", ["s", "m1"], ["t"], axis=0),
             helper.make_node("Reshape", ["x", "t"], ["y"])]
    minus1 = numpy_helper.from_array(np.array([-1], np.int64), "m1")
    mod = mb.from_onnx(make(nodes, [vi("x", ["B", 2, 3])], [vi("y", ["B", 6])], [minus1]))
    assert mod.batch_dim == "B" and mod["main"].ret_type.shape == (1, 6)
    x = np.arange(30, dtype="float32").reshape(5, 2, 3)
    np.testing.assert_array_equal(interpret(mod.specialize(5), x), x.reshape(5, 6))


def test_a_model_that_fails_at_batch_one_says_the_batch_was_one():
    # the Reshape's target hard-codes a batch of 2
    nodes = [helper.make_node("Reshape", ["x", "t"], ["y"])]
    target = numpy_helper.from_array(np.array([2, -1], np.int64), "t")
    model = make(nodes, [vi("x", ["N", 3])], [vi("y", [2, None])], [target])
    with pytest.raises(GraphError, match=r"(?s)Reshape.*symbolic batch 'N' was set to 1 for "
                       r"this import. If the model needs another size, pass batch_size=N"):
        mb.from_onnx(model)
    assert mb.from_onnx(model, batch_size=2)["main"].ret_type.shape == (2, 3)


@pytest.mark.parametrize("bad", [0, -2, 2.0, True])
def test_a_batch_size_must_be_a_positive_integer(bad):
    model = examples.mlp(batch=None, sizes=(6, 3))
    with pytest.raises(ArgumentError, match=f"batch_size must be a positive integer, got {bad}"):
        mb.from_onnx(model, batch_size=bad)
    with pytest.raises(ArgumentError, match=f"batch size 'N' must be a positive integer"):
        mb.from_onnx(model).specialize(bad)


def test_a_symbolic_batch_model_compiles_per_batch_size_and_matches_onnxruntime():
    model = examples.mlp(batch=None, sizes=(6, 5, 3))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exe = mb.compile(mb.from_onnx(model))
    rng = np.random.default_rng(0)
    for n in (1, 7):
        x = rng.standard_normal((n, 6)).astype("float32")
        (want,) = session.run(None, {"input": x})
        np.testing.assert_allclose(exe(x), want, rtol=1e-4, atol=1e-5)
    assert exe.batch_sizes == [1, 7]


def test_a_symbolic_inner_dimension_is_an_error_naming_it():
    model = make([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["N", "T"])],
                 [vi("y", ["N", "T"])])
    for kwargs in ({}, {"batch_size": 2}):
        with pytest.raises(DynamicShapeError, match=r"\[MLC-G010\] input 'x' has the symbolic "
                           r"dimension 'T' at axis 1 \(shape \(N, T\)\).*Instead: pass "
                           r"shapes=\{'x': \(N, T\)\} to from_onnx with numbers"):
            mb.from_onnx(model, **kwargs)
    assert mb.from_onnx(model, shapes={"x": (2, 7)})["main"].ret_type.shape == (2, 7)


def test_differently_named_batch_dimensions_are_an_error():
    model = make([helper.make_node("Add", ["a", "b"], ["y"])], [vi("a", ["N", 3]),
                 vi("b", ["M", 3])], [vi("y", ["N", 3])])
    with pytest.raises(DynamicShapeError, match="inputs 'a' and 'b' have different symbolic "
                       "first dimensions 'N' and 'M'.*Instead: pass batch_size=N"):
        mb.from_onnx(model)
    assert mb.from_onnx(model, batch_size=2)["main"].ret_type.shape == (2, 3)


def test_an_unnamed_first_dimension_is_the_batch_too():
    model = make([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [None, 3])],
                 [vi("y", [None, 3])])
    mod = mb.from_onnx(model)
    assert (mod.batch_dim, mod.batch_inputs) == ("?", ("x",))


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
    node = helper.make_node("Identity", ["x"], ["y"])
    model = make([node], [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)])
    with pytest.raises(UnsupportedModelError, match="element type STRING, which mlcbook does "
                       "not support .supported: bfloat16, bool, .*uint64"):
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


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("inputs", [["x"], ["x", ""], ["x", "", ""]])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_clip_without_bounds_returns_infinities_unchanged(dtype, inputs, opt_level):
    # ONNX's reference keeps x when no bound is given; onnxruntime clamps +-inf to the
    # largest finite value, a documented disagreement with the specification
    from onnx.reference import ReferenceEvaluator
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = make([helper.make_node("Clip", inputs, ["y"])], [vi("x", [6], t)], [vi("y", [6], t)])
    x = np.array([np.inf, -np.inf, np.nan, 1.5, -2, 0], dtype)
    want, = ReferenceEvaluator(model).run(None, {"x": x})
    got = mb.compile(mb.from_onnx(model), opt_level=opt_level)(x)
    np.testing.assert_array_equal(got, want)
    assert np.isposinf(got[0]) and np.isneginf(got[1])
