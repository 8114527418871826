"""``mb.models``: a small model shipped inside mlcbook, so that the tour and the command line
have something to compile on a fresh install, without downloads.

    >>> import mlcbook as mb
    >>> model = mb.models.tiny_convnet()          # an onnx.ModelProto
    >>> mod = mb.from_onnx(model, batch_size=8)
    >>> mb.models.save_tiny_convnet("tiny_convnet.onnx")

The model is built with ``onnx.helper`` each time it is asked for, from weights drawn with
a fixed seed: the same bytes on every machine. The weights are random, not trained, so its
predictions mean nothing. The compiler does read weight values where it folds constants
(a BatchNorm into the conv before it), but what it does with them does not depend on
their being trained, so the model exercises the compiler exactly as a trained one would.
"""

from __future__ import annotations

import os

import numpy as np

#: the ONNX opset the shipped model declares
OPSET = 17
#: the name of the model's input; its shape is (N, 1, 28, 28) with a symbolic batch N
INPUT_NAME = "image"
INPUT_SHAPE = ("N", 1, 28, 28)


def tiny_convnet(seed: int = 0):
    """A 28 x 28 grey-image classifier with 12 nodes and about 52 thousand weights::

        conv 3x3 (1 -> 8) + batch norm + relu + max pool 2x2     -> (N, 8, 14, 14)
        conv 3x3 (8 -> 16) + relu + max pool 2x2                 -> (N, 16, 7, 7)
        flatten, linear 784 -> 64, relu, linear 64 -> 10, softmax -> (N, 10)

    Returns an ``onnx.ModelProto`` whose batch dimension is symbolic (``"N"``): fix it at
    import with ``mb.from_onnx(model, batch_size=...)``, or leave it for ``mb.compile``'s
    executable to compile per batch size (:mod:`mlcbook.graph.batch`).
    """
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, shape, std, mean=0.0):
        data = (mean + rng.standard_normal(shape) * std).astype(np.float32)
        inits.append(numpy_helper.from_array(data, name))
        return name

    def he(name, shape):  # keeps activations of order 1 through relu layers
        return weight(name, shape, np.sqrt(2.0 / np.prod(shape[1:])))

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    x = node("Conv", [INPUT_NAME, he("conv1.weight", (8, 1, 3, 3)),
                      weight("conv1.bias", (8,), 0.1)],
             "conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    bn = [weight("bn1.scale", (8,), 0.1, mean=1.0), weight("bn1.bias", (8,), 0.1),
          weight("bn1.mean", (8,), 0.1)]
    var = numpy_helper.from_array((rng.random(8) + 0.5).astype(np.float32), "bn1.var")
    inits.append(var)
    x = node("BatchNormalization", [x, *bn, "bn1.var"], "bn1", epsilon=1e-5)
    x = node("Relu", [x], "relu1")
    x = node("MaxPool", [x], "pool1", kernel_shape=[2, 2], strides=[2, 2])
    x = node("Conv", [x, he("conv2.weight", (16, 8, 3, 3)), weight("conv2.bias", (16,), 0.1)],
             "conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    x = node("Relu", [x], "relu2")
    x = node("MaxPool", [x], "pool2", kernel_shape=[2, 2], strides=[2, 2])
    x = node("Flatten", [x], "flatten", axis=1)
    x = node("Gemm", [x, he("fc1.weight", (64, 784)), weight("fc1.bias", (64,), 0.1)], "fc1",
             transB=1)
    x = node("Relu", [x], "relu3")
    x = node("Gemm", [x, he("fc2.weight", (10, 64)), weight("fc2.bias", (10,), 0.1)], "fc2",
             transB=1)
    node("Softmax", [x], "probs", axis=-1)

    graph = helper.make_graph(
        nodes, "tiny_convnet",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="mlcbook")
    model.ir_version = 8
    return model


def save_tiny_convnet(path, seed: int = 0) -> str:
    """Write :func:`tiny_convnet` to ``path`` as an ``.onnx`` file; returns the path."""
    import onnx
    path = os.fspath(path)
    onnx.save(tiny_convnet(seed), path)
    return path


def sample_input(batch: int, seed: int = 0) -> np.ndarray:
    """A batch of ``batch`` random "images" for :func:`tiny_convnet`: float32, (batch, 1, 28, 28),
    values in [0, 1) like grey pixels."""
    return np.random.default_rng(seed).random((batch,) + INPUT_SHAPE[1:], dtype=np.float32)


__all__ = ["tiny_convnet", "save_tiny_convnet", "sample_input", "INPUT_NAME", "INPUT_SHAPE",
           "OPSET"]
