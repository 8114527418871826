"""Importing ONNX models for training (from_onnx(..., training=True)) and exporting the
training forms back: BatchNormalization against onnx.reference and onnxruntime, Dropout's
mask against ONNX's definition, and the role of each weight."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.grading.ch05 import bn_training_model

X = np.random.default_rng(0).standard_normal((3, 3, 6, 6)).astype("float32")


def _with_running_outputs(model):
    model.graph.output.extend([helper.make_tensor_value_info(n, TensorProto.FLOAT, [4])
                               for n in ("bn.new_mean", "bn.new_var")])
    return model


def test_the_inference_import_still_refuses_training_mode():
    # chapter 5's exercise 05.fix_bn_training starts from this message
    with pytest.raises(UnsupportedModelError, match=r"node 'bn' \(BatchNormalization\): "
                       r"training_mode=1 is not supported \(models are imported for "
                       r"inference\)"):
        mb.from_onnx(bn_training_model(), batch_size=3)


def test_batch_norm_in_training_mode_matches_onnx_reference_and_onnxruntime():
    import onnxruntime as ort
    model = _with_running_outputs(bn_training_model())
    mod = mb.from_onnx(model, batch_size=3, training=True)
    got = mb.graph.interpret(mod, X)
    ref = ReferenceEvaluator(model).run(None, {"x": X})
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rt = sess.run(None, {"x": X})
    for name, g, r, o in zip(("y", "running mean", "running var"), got, ref, rt):
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-5, err_msg=name)
        np.testing.assert_allclose(g, o, rtol=1e-5, atol=1e-5, err_msg=name)


def test_the_running_statistics_of_a_training_import_are_buffers():
    d = mb.graph.declarations(mb.from_onnx(bn_training_model(), batch_size=3,
                                           training=True)["main"])
    assert d.buffers == ("bn.running_mean", "bn.running_var")
    assert d.parameters == ("conv.weight", "conv.bias", "bn.scale", "bn.bias")


def test_the_import_logs_what_it_decided(caplog):
    with caplog.at_level(logging.INFO, logger="mlcbook.frontend.onnx_training_mode"):
        mb.from_onnx(bn_training_model(), batch_size=3, training=True)
    assert "from_onnx(training=True): 4 parameters, 2 buffers, 0 constants" in caplog.text


def test_a_symbolic_batch_training_import_specializes_in_training_form():
    mod = mb.from_onnx(bn_training_model(), training=True).specialize(3)
    assert [c.op for c in mod["main"].calls()] == ["conv", "batch_norm_train", "relu"]


def _dropout_model(ratio=0.25, seed=9, mask=True):
    inits = [numpy_helper.from_array(np.array(ratio, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "train")]
    outs = ["y", "mask"] if mask else ["y"]
    node = helper.make_node("Dropout", ["x", "ratio", "train"], outs, name="drop", seed=seed)
    graph = helper.make_graph(
        [node], "drop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 50])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 50])]
        + ([helper.make_tensor_value_info("mask", TensorProto.BOOL, [8, 50])] if mask else []),
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_dropout_in_training_follows_onnx_definition_with_its_mask():
    x = np.random.default_rng(1).standard_normal((8, 50)).astype("float32")
    mod = mb.from_onnx(_dropout_model(), training=True)
    y, mask = mb.graph.interpret(mod, x)
    assert mask.dtype == np.bool_ and 0.15 < 1 - mask.mean() < 0.35
    # ONNX: output = scale * data * mask, scale = 1 / (1 - ratio)
    np.testing.assert_allclose(y, x * mask / np.float32(0.75), rtol=1e-6)
    assert mb.graph.declarations(mod["main"]).buffers == ("drop.counter",)


def test_dropout_is_refused_in_training_mode_by_an_inference_import():
    with pytest.raises(UnsupportedModelError, match="training_mode=True with ratio=0.25"):
        mb.from_onnx(_dropout_model(mask=False))


def test_training_forms_export_as_onnx_training_nodes():
    mod = mb.from_onnx(bn_training_model(), batch_size=3, training=True)
    back = mb.to_onnx(mod["main"])
    bn = next(n for n in back.graph.node if n.op_type == "BatchNormalization")
    assert helper.get_attribute_value(next(a for a in bn.attribute
                                           if a.name == "training_mode")) == 1
    (ref,) = ReferenceEvaluator(back).run(None, {"x": X})
    np.testing.assert_allclose(mb.compile(mod)(X), ref, rtol=1e-4, atol=1e-4)
    again = mb.from_onnx(back, training=True)
    assert [c.op for c in again["main"].calls()] == ["conv", "batch_norm_train", "relu"]


def test_dropout_exports_with_training_mode_and_its_seed():
    back = mb.to_onnx(mb.from_onnx(_dropout_model(mask=False), training=True)["main"])
    (node,) = back.graph.node
    inits = {t.name: numpy_helper.to_array(t) for t in back.graph.initializer}
    assert node.op_type == "Dropout" and node.attribute[0].i == 9
    assert inits[node.input[1]] == np.float32(0.25) and bool(inits[node.input[2]])
    assert "drop.counter" not in inits
    onnx.checker.check_model(back)


def _two_layers(listed_inputs):
    rng = np.random.default_rng(2)
    inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
             for n, s in (("w1", (4, 5)), ("b1", (5,)), ("w2", (5, 3)), ("b2", (3,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
             helper.make_node("Gemm", ["h", "w2", "b2"], ["y"], name="fc2")]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])]
    ins += [helper.make_tensor_value_info(t.name, TensorProto.FLOAT, list(t.dims))
            for t in inits if t.name in listed_inputs]
    graph = helper.make_graph(nodes, "two", ins,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_initializers_listed_as_inputs_are_the_parameters_when_some_are_not():
    d = mb.graph.declarations(mb.from_onnx(_two_layers({"w2", "b2"}), training=True)["main"])
    assert d.parameters == ("w2", "b2")
    assert d.constants == ("w1", "b1")
    assert d["w1"].reason.startswith("an initializer not among the graph inputs")


def test_with_no_initializer_listed_every_float_weight_trains():
    d = mb.graph.declarations(mb.from_onnx(_two_layers(set()), training=True)["main"])
    assert d.parameters == ("w1", "b1", "w2", "b2")


def _five_output_bn(opset, channels=4):
    """A BatchNormalization of opsets 9-13 in training mode: five outputs (y, running mean
    and variance, saved mean and variance), momentum 0.8."""
    rng = np.random.default_rng(opset)
    inits = {"s": rng.random(channels) + 0.5, "b": rng.random(channels),
             "m": rng.random(channels), "v": rng.random(channels) + 0.5}
    outs = ["y", "rm", "rv", "sm", "sv"]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outs, name="bn",
                            momentum=0.8)
    graph = helper.make_graph(
        [node], "bn9",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, channels, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, channels, 3, 3])]
        + [helper.make_tensor_value_info(n, TensorProto.FLOAT, [channels]) for n in outs[1:]],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model, {k: v.astype(np.float32).astype(np.float64) for k, v in inits.items()}


@pytest.mark.parametrize("opset", [9, 12, 13])
def test_an_old_opsets_five_output_batch_norm_trains_on_the_batch(opset):
    # neither onnxruntime nor onnx.reference runs this form; the operator's text defines it:
    # batch statistics, running = momentum * running + (1 - momentum) * batch, and the
    # saved mean and variance are the batch's (population variance)
    model, p = _five_output_bn(opset)
    mod = mb.from_onnx(model, training=True)
    x = (np.random.default_rng(1).standard_normal((8, 4, 3, 3)) * 2 + 1).astype(np.float32)
    got = mb.graph.interpret(mod, x)
    xd = x.astype(np.float64)
    mean, var = xd.mean(axis=(0, 2, 3)), xd.var(axis=(0, 2, 3))
    y = (xd - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5) * p["s"][:, None, None] \
        + p["b"][:, None, None]
    want = [y, 0.8 * p["m"] + 0.2 * mean, 0.8 * p["v"] + 0.2 * var, mean, var]
    for name, g, w in zip(("y", "running mean", "running var", "saved mean", "saved var"),
                          got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5, err_msg=name)
    assert mb.graph.declarations(mod["main"]).buffers == ("m", "v")
