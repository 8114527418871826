"""Converters of ONNX's elementwise math, activation and logic ops (beside the core set of
:mod:`.onnx_ops`): trigonometry, rounding, the parametric activations, predicates, boolean
logic, ``BitShift`` and the bitwise ops, ``Mod``, ``PRelu`` and the variadic ``Mean``.

    >>> CONVERTERS["Elu"].attrs
    frozenset({'alpha'})
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from ..tir.expr import FLOAT_DTYPES
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

#: ONNX op -> (graph op, {ONNX attribute: graph attribute})
_UNARY = {"Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos",
          "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh",
          "Atanh": "atanh", "Swish": "swish", "Floor": "floor", "Ceil": "ceil",
          "Round": "round", "Softplus": "softplus", "Mish": "mish",
          "HardSwish": "hard_swish", "Sign": "sign", "IsNaN": "isnan", "Not": "logical_not",
          "Elu": "elu", "Selu": "selu", "Celu": "celu",
          "ThresholdedRelu": "thresholded_relu", "Shrink": "shrink", "IsInf": "isinf",
          "HardSigmoid": "hard_sigmoid", "Softsign": "softsign", "BitwiseNot": "bitwise_not"}
_ATTRS = {"Elu": ("alpha",), "Swish": ("alpha",), "Selu": ("alpha", "gamma"), "Celu": ("alpha",),
          "ThresholdedRelu": ("alpha",),
          "Shrink": ("bias", "lambd"), "HardSigmoid": ("alpha", "beta"), "IsInf": ("detect_negative", "detect_positive")}
_BINARY = {"GreaterOrEqual": "greater_equal", "LessOrEqual": "less_equal",
           "And": "logical_and", "Or": "logical_or", "Xor": "logical_xor", "PRelu": "prelu",
           "BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def _unary(cx, ins, attrs):
    return cx.call(_UNARY[cx.node.op_type], ins[0], **attrs)


for _t in _UNARY:
    converter(_t, attrs=_ATTRS.get(_t, ()))(guard_dtype(_unary))


@converter(*_BINARY)
@guard_dtype
def _binary(cx, ins, attrs):
    return cx.call(_BINARY[cx.node.op_type], ins[0], ins[1])


@converter("BitShift", attrs=("direction",))
@guard_dtype
def _bitshift(cx, ins, attrs):
    return cx.call("bitshift", ins[0], ins[1], direction=attrs["direction"])


@converter("Mod", attrs=("fmod",))
@guard_dtype
def _mod(cx, ins, attrs):
    return cx.call("mod", ins[0], ins[1], fmod=attrs.get("fmod", 0))


@converter("Mean")
@guard_dtype
def _mean(cx, ins, attrs):
    if ins[0].dtype not in FLOAT_DTYPES:
        raise Unsupported(f"Mean of {ins[0].dtype} inputs (mlcbook averages floats)")
    acc = ins[0]
    for k, x in enumerate(ins[1:]):
        acc = cx.call("add", acc, x, suffix=f"_{k}")
    if len(ins) == 1:
        return acc
    return cx.call("div", acc, Constant(np.asarray(len(ins), ins[0].dtype)))


__all__ = ["CONVERTERS"]
