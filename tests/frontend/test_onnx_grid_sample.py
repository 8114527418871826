"""GridSample and AffineGrid against onnxruntime, with grids reaching far outside [-1, 1]
(onnx's node cases stay near it): the numpy reference, the loop IR and native code."""
import itertools

import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import OpShapeError, UnsupportedModelError
from mlcbook.graph import interpret
from mlcbook.graph.compile import compile as compile_module
from mlcbook.graph.legalize import legalize
from mlcbook.ops import TensorType as T

ort = pytest.importorskip("onnxruntime")


def _grid_sample_model(x_shape, grid_shape, **attrs):
    out = list(x_shape[:2]) + list(grid_shape[1:-1])
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], **attrs)
    graph = helper.make_graph(
        [node], "gs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                       helper.make_tensor_value_info("grid", TensorProto.FLOAT, grid_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def _run(model, feed, runner):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feed)[0]
    mod = mb.from_onnx(model)
    if runner == "compiled":
        got = compile_module(mod, target="llvm").run(feed)
    else:
        args = [feed[v.name] for v in model.graph.input]
        got = interpret(legalize(mod) if runner == "legalized" else mod, *args)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)


MODES = list(itertools.product(["nearest", "linear", "cubic"], ["zeros", "border", "reflection"],
                               [0, 1]))


@pytest.mark.parametrize("runner", ["interpret", "legalized"])
@pytest.mark.parametrize("mode,padding,align", MODES,
                         ids=[f"{m}-{p}-align{a}" for m, p, a in MODES])
def test_grid_sample_2d_matches_onnxruntime_far_outside_the_image(mode, padding, align, runner):
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((1, 2, 3, 4)).astype(np.float32),
            "grid": rng.uniform(-3.5, 3.5, (1, 2, 4, 2)).astype(np.float32)}
    model = _grid_sample_model((1, 2, 3, 4), (1, 2, 4, 2), mode=mode, padding_mode=padding,
                               align_corners=align)
    _run(model, feed, runner)


@pytest.mark.parametrize("mode,padding,runner", [("linear", "reflection", "legalized"),
                                                 ("nearest", "border", "interpret"),
                                                 ("linear", "border", "legalized"),
                                                 ("cubic", "reflection", "interpret")])
def test_grid_sample_more_cases(mode, padding, runner):
    # 3-D (volumetric) for linear and nearest; cubic is 2-D only
    rng = np.random.default_rng(1)
    x_shape = (2, 1, 2, 3, 4) if mode != "cubic" else (2, 2, 3, 4)
    grid_shape = (2, 2, 3, 2, 3) if mode != "cubic" else (2, 3, 2, 2)
    feed = {"x": rng.standard_normal(x_shape).astype(np.float32),
            "grid": rng.uniform(-2.5, 2.5, grid_shape).astype(np.float32)}
    _run(_grid_sample_model(x_shape, grid_shape, mode=mode, padding_mode=padding), feed, runner)


@pytest.mark.parametrize("align", [0, 1])
@pytest.mark.parametrize("size", [(2, 1, 3, 4), (1, 2, 2, 3, 4)])
def test_affine_grid_matches_onnxruntime(size, align):
    r = len(size) - 2
    theta = np.random.default_rng(2).standard_normal((size[0], r, r + 1)).astype(np.float32)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=align)
    graph = helper.make_graph(
        [node], "ag", [helper.make_tensor_value_info("theta", TensorProto.FLOAT, theta.shape)],
        [helper.make_tensor_value_info("grid", TensorProto.FLOAT,
                                       [size[0], *size[2:], r])],
        [helper.make_tensor("size", TensorProto.INT64, [len(size)], list(size))])
    _run(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]),
         {"theta": theta}, "legalized")


def test_grid_sample_cubic_of_a_volume_says_to_use_linear():
    with pytest.raises(OpShapeError, match="cubic mode samples 2-D.*Instead: use mode='linear'"):
        mb.ops.get("grid_sample").infer_type([T((1, 1, 2, 3, 4)), T((1, 2, 2, 2, 3))],
                                             {"mode": "cubic"})


def test_grid_sample_names_a_grid_of_the_wrong_shape():
    with pytest.raises(OpShapeError, match=r"grid \(1, 5, 5, 3\) do not fit"):
        mb.ops.get("grid_sample").infer_type([T((1, 1, 4, 4)), T((1, 5, 5, 3))], {})


def test_unknown_grid_sample_padding_is_reported_as_unsupported():
    model = _grid_sample_model((1, 1, 3, 3), (1, 2, 2, 2), padding_mode="wrap")
    with pytest.raises(UnsupportedModelError, match="padding_mode='wrap'"):
        mb.from_onnx(model)
