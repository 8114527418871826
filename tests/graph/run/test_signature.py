"""An executable's interface as onnxruntime's: inputs and outputs with their ONNX names,
shapes and dtypes, kept through save/load and into the exported header; run(names, feeds);
the notebook display."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook import models
from mlcbook.errors import ArgumentError, ArtifactError
from mlcbook.graph.memory.plan import Plan, Slot, check_plan
from mlcbook.ops.types import TensorType
from mlcbook.graph.run.signature import TensorInfo, symbolic_shape


def _two_outputs():
    nodes = [helper.make_node("Add", ["a", "b"], ["sum"]),
             helper.make_node("Mul", ["a", "b"], ["prod"])]
    graph = helper.make_graph(
        nodes, "two", [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 5])
                       for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 5]) for n in ("sum", "prod")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def convnet():
    return mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=2))


@pytest.fixture(scope="module")
def two():
    return mb.compile(mb.from_onnx(_two_outputs()))


def _session(model):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_inputs_and_outputs_match_onnxruntimes(convnet):
    sess = _session(models.tiny_convnet())
    assert [t.name for t in convnet.inputs] == [i.name for i in sess.get_inputs()]
    assert [t.name for t in convnet.outputs] == [o.name for o in sess.get_outputs()] == ["probs"]
    assert convnet.inputs == [TensorInfo("image", (2, 1, 28, 28), "float32")]
    assert convnet.outputs == [TensorInfo("probs", (2, 10), "float32")]


def test_run_in_onnxruntimes_form_returns_the_named_outputs(two):
    rng = np.random.default_rng(0)
    feeds = {"a": rng.standard_normal((2, 5), dtype=np.float32),
             "b": rng.standard_normal((2, 5), dtype=np.float32)}
    expected = _session(_two_outputs()).run(None, feeds)
    got = two.run(None, feeds)
    assert isinstance(got, list) and len(got) == 2
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    prod, = two.run(["prod"], feeds)
    np.testing.assert_allclose(prod, feeds["a"] * feeds["b"], rtol=1e-6)
    reordered = two.run(["prod", "sum"], feeds)
    np.testing.assert_allclose(reordered[1], feeds["a"] + feeds["b"], rtol=1e-6)


def test_run_with_a_dict_alone_still_returns_what_a_call_does(two):
    feeds = {"a": np.ones((2, 5), np.float32), "b": np.full((2, 5), 2, np.float32)}
    got = two.run(feeds)
    assert isinstance(got, tuple)
    np.testing.assert_array_equal(got[0], two(feeds["a"], feeds["b"])[0])


@pytest.mark.parametrize("names, message", [
    (["total"], "the model has no output named 'total'; its outputs are: sum, prod"),
    ("sum", "takes a list of output names (or None for all), got 'sum'"),
])
def test_run_with_bad_output_names_says_which_exist(two, names, message):
    feeds = {"a": np.ones((2, 5), np.float32), "b": np.ones((2, 5), np.float32)}
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        two.run(names, feeds)


def test_run_without_feeds_mapping_is_refused(two):
    with pytest.raises(ArgumentError, match=r"exe.run takes a dict \{input name: array\}, or "
                                            "onnxruntime's"):
        two.run(["sum"], [np.ones((2, 5), np.float32)] * 2)


def test_batch_executable_runs_in_onnxruntimes_form():
    exe = mb.compile(mb.from_onnx(models.tiny_convnet()))
    x = models.sample_input(3)
    probs, = exe.run(["probs"], {"image": x})
    expected, = _session(models.tiny_convnet()).run(None, {"image": x})
    np.testing.assert_allclose(probs, expected, rtol=1e-4, atol=1e-5)


def test_output_names_survive_save_and_load(two, tmp_path):
    two.save(tmp_path / "two.mlcb")
    loaded = mb.load(tmp_path / "two.mlcb")
    assert [t.name for t in loaded.outputs] == ["sum", "prod"]


def test_a_plan_without_output_names_loads_with_numbered_ones(two):
    doc = two.plan.to_json()
    del doc["output_names"]   # as artifacts written before outputs had names
    plan = Plan.from_json(doc)
    assert plan.output_names == [] and plan.names_of_outputs == ["output_0", "output_1"]


@pytest.mark.parametrize("names", [["y", "z"], []])
def test_a_plan_with_one_name_per_output_passes_the_check(names):
    check_plan(_identity_plan(names), {})


@pytest.mark.parametrize("names", [["y"], ["y", "y"]])
def test_a_plan_with_wrong_output_names_is_refused(names):
    with pytest.raises(ArtifactError, match="not one distinct name per output"):
        check_plan(_identity_plan(names), {})


def _identity_plan(names):
    """A plan returning its input twice, with ``names`` as its output names."""
    ty = TensorType((2,), "float32")
    return Plan([("x", ty)], [Slot((2,), "float32", "input", 0)], [], [0, 0], True,
                output_names=names)


def test_graph_built_in_python_has_numbered_outputs():
    x = mb.graph.Var("x", TensorType((4,), "float32"))
    f = mb.graph.Function([x], mb.graph.Tuple([mb.graph.op.relu(x), mb.graph.op.exp(x)]))
    exe = mb.compile(f)
    assert [t.name for t in exe.outputs] == ["output_0", "output_1"]


def test_the_exported_header_names_the_outputs(two, tmp_path):
    lib = two.export(tmp_path / "out", name="net")
    header = lib.header.read_text()
    assert "#define NET_OUTPUT_sum 0" in header and "#define NET_OUTPUT_prod 1" in header
    assert '/* output1: "prod", float32[2, 5] */' in header


def test_the_notebook_display_shows_inputs_outputs_kernels_and_arena(convnet):
    page = convnet._repr_html_()
    for text in ("image", "probs", "(2, 1, 28, 28)", "float32", "calls per run", "one arena"):
        assert text in page
    for kernel in convnet.kernels:
        assert f"<td style='text-align:left'>{kernel}</td>" in page


def test_symbolic_shapes_name_the_axes_that_follow_the_batch():
    assert symbolic_shape((1, 10), (2, 10), "N") == ("N", 10)
    assert symbolic_shape((4, 3), (8, 3), "B") == ("4*B", 3)
    assert symbolic_shape((5,), (7,), "N") == ("?",)
