"""The converters the declarations' ONNX attribute mappings make (mlcbook.ops.onnx_attrs):
Conv's auto_pad and implied kernel, BatchNormalization's momentum, LayerNormalization's
outputs, each against onnxruntime; bad values named before anything converts."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(0)


def _model(node, x_shape, outputs, weights):
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(model)      # the outputs' shapes


def _against_ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})
    got = mb.compile(mb.from_onnx(model))(x)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER", "VALID"])
def test_conv_reads_auto_pad_and_takes_its_kernel_from_the_weight(auto_pad):
    w = rng.standard_normal((4, 2, 2, 3)).astype("float32")
    node = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad=auto_pad, strides=[2, 1])
    model = _model(node, (1, 2, 7, 6), ["y"], {"w": w})
    (call,) = mb.from_onnx(model)["main"].calls()
    assert call.attrs["kernel_shape"] == (2, 3)
    _against_ort(model, rng.standard_normal((1, 2, 7, 6)).astype("float32"))


def test_an_unknown_auto_pad_is_named_before_anything_converts():
    node = helper.make_node("AveragePool", ["x"], ["y"], auto_pad="SAME", kernel_shape=[2, 2])
    with pytest.raises(UnsupportedModelError, match=r"auto_pad='SAME' is not one of"):
        mb.from_onnx(_model(node, (1, 1, 4, 4), ["y"], {}))


def test_batch_normalization_imports_for_inference_whatever_its_momentum():
    c = 3
    stats = {"s": rng.standard_normal(c), "b": rng.standard_normal(c), "m": rng.standard_normal(c),
             "v": rng.random(c) + 0.5}
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                            epsilon=1e-3, momentum=0.7)
    model = _model(node, (2, c, 4), ["y"], {k: v.astype("float32") for k, v in stats.items()})
    _against_ort(model, rng.standard_normal((2, c, 4)).astype("float32"))


@pytest.mark.parametrize("outputs,num_outputs", [(["y"], 1), (["y", "mean", "inv_std"], 3),
                                                 (["y", "", "inv_std"], 3)])
def test_layer_normalization_computes_the_statistics_its_outputs_use(outputs, num_outputs):
    scale = rng.standard_normal(5).astype("float32")
    node = helper.make_node("LayerNormalization", ["x", "scale"], outputs, axis=-1,
                            epsilon=1e-3, stash_type=1)
    model = _model(node, (2, 3, 5), [o for o in outputs if o], {"scale": scale})
    (call,) = mb.from_onnx(model)["main"].calls()
    assert call.attrs["num_outputs"] == num_outputs
    _against_ort(model, rng.standard_normal((2, 3, 5)).astype("float32"))
