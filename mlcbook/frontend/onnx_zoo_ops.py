"""Converters for the ops real exported models lean on beyond the core set: inference-time
``Dropout``, variadic ``Sum`` (``LRN`` is declared with its ONNX name), and the
constant-producing ops ``ConstantOfShape`` and ``Range``, whose inputs are their attributes.

Those two, like ``Shape`` and ``Size`` (declared with their ONNX names), become calls of the
graph ops of :mod:`mlcbook.ops.shape`; the importer folds them with the graph's constant
folding as it binds each value, so a ``Reshape`` whose target shape is computed by
``Shape -> Gather -> Concat`` sees a constant, and weights produced by ``ConstantOfShape``
(as in onnx's model-zoo test models) are constants.

    >>> CONVERTERS["ConstantOfShape"].static_inputs
    (0,)
"""

from __future__ import annotations

import numpy as np

from .onnx_context import Unsupported, onnx_dtype
from .onnx_ops import CONVERTERS, converter


@converter("Dropout", attrs=("ratio", "seed", "is_test"), static=(1, 2), outputs=2)
def _dropout(cx, ins, attrs):
    training = cx.static(2, "training_mode")
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        ratio = cx.static(1, "ratio")
        drops = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
        if drops != 0:
            # with ratio 0 training drops nothing either: the same as inference
            raise Unsupported(f"training_mode=True with ratio={drops} is not supported "
                              "(models are imported for inference, where Dropout passes "
                              "its input through)")
    x = ins[0]
    outs = [x]
    if len(cx.node.output) > 1 and cx.node.output[1]:
        # in inference every element is kept: the mask is all True
        outs.append(cx.call("constant_of_shape", suffix="_mask", shape=x.shape, value=True,
                            dtype="bool"))
    return outs


@converter("Sum")
def _sum(cx, ins, attrs):
    acc = ins[0]
    for k, x in enumerate(ins[1:]):
        last = k == len(ins) - 2
        acc = cx.call("add", acc, x, suffix="" if last else f"_{k}")
    return acc


@converter("ConstantOfShape", attrs=("value",), static=(0,))
def _constant_of_shape(cx, ins, attrs):
    from onnx import numpy_helper
    shape = tuple(int(s) for s in cx.static(0, "shape").reshape(-1))
    if "value" in attrs:
        dtype = onnx_dtype(attrs["value"].data_type, "the value")
        value = numpy_helper.to_array(attrs["value"]).reshape(-1)[0].item()
    else:
        dtype, value = "float32", 0.0
    return cx.call("constant_of_shape", shape=shape, value=value, dtype=dtype)


def _scalar(cx, index: int, what: str):
    v = cx.static(index, what)
    if v.size != 1:
        raise Unsupported(f"{what} must be a scalar, got shape {v.shape}")
    return v.reshape(()).item(), v.dtype.name


@converter("Range", static=(0, 1, 2))
def _range(cx, ins, attrs):
    (start, dtype), (limit, _), (delta, _) = (_scalar(cx, k, w) for k, w in
                                              enumerate(("start", "limit", "delta")))
    if dtype == "bool":
        raise Unsupported("start has dtype bool; mlcbook's Range takes a number type")
    return cx.call("range", start=start, limit=limit, delta=delta, dtype=dtype)


__all__ = ["CONVERTERS"]
