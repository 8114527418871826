"""One converter per supported ONNX op type: ONNX node -> graph IR calls.

A converter declares the attributes it understands (any other attribute is reported as
unsupported), which inputs it needs as constants at import, how many outputs it produces,
and an optional check of attribute *values*. The importer runs every check before it
converts anything, so one error can list every unsupported node of a model.

    >>> CONVERTERS["Relu"].attrs
    frozenset()
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import OpAttributeError, OpDTypeError
from ..graph.expr import Constant, Expr
from ..ops.declare import declared_onnx_ops, onnx_name
from ..ops.nn import check_auto_pad, onnx_window
from ..ops.onnx_attrs import SAME_NAMES
from ..ops.types import LOWBIT_DTYPES
from ..tir.expr import FLOAT_DTYPES
from .onnx_context import Context, Unsupported, onnx_dtype, tensor_array


@dataclass(frozen=True)
class Converter:
    fn: Callable[[Context, list, dict], Any]
    attrs: frozenset
    static_inputs: tuple[int, ...]
    outputs: int
    check: Callable[[dict], list[str]] | None


class _Converters(MutableMapping):
    """ONNX op type -> its converter: the hand-written ones (:func:`converter`, kept in
    ``written``), then those of the ops declared with an ONNX name
    (:mod:`mlcbook.ops.declare`), made when looked up so that an op declared after this
    module was imported converts too. Setting, deleting and clearing touch the hand-written
    ones only: a declared op's converter goes with the op."""

    def __init__(self):
        self.written: dict[str, Converter] = {}

    def __getitem__(self, op_type: str) -> Converter:
        if op_type in self.written:
            return self.written[op_type]
        return _declared(declared_onnx_ops()[op_type])

    def __setitem__(self, op_type: str, conv: Converter) -> None:
        self.written[op_type] = conv

    def __delitem__(self, op_type: str) -> None:
        if op_type not in self:
            raise KeyError(op_type)
        self.written.pop(op_type, None)

    def clear(self) -> None:
        self.written.clear()

    def __iter__(self):
        return iter(set(self.written) | set(declared_onnx_ops()))

    def __len__(self) -> int:
        return len(set(self.written) | set(declared_onnx_ops()))


CONVERTERS = _Converters()


def converter(*op_types: str, attrs=(), static=(), outputs=1, check=None, training=False):
    """Register ``fn(cx, inputs, attrs)`` as the converter of ``op_types`` (with
    ``training``: the one ``from_onnx(..., training=True)`` uses instead)."""
    table = TRAINING_CONVERTERS if training else CONVERTERS

    def deco(fn):
        for t in op_types:
            table[t] = Converter(fn, frozenset(attrs), tuple(static), outputs, check)
        return fn
    return deco


#: the converters of a training import that differ from the inference ones (BatchNorm and
#: Dropout: mlcbook.frontend.onnx_training_mode)
TRAINING_CONVERTERS: dict[str, Converter] = {}


def converter_of(op_type: str, training: bool = False) -> Converter | None:
    """The converter of ``op_type`` for an inference or a training import."""
    return (TRAINING_CONVERTERS.get(op_type) if training else None) or CONVERTERS.get(op_type)


#: ops of other domains that have a converter: domain -> op types
OTHER_DOMAINS = {"ai.onnx.preview.training": ("Adagrad", "Adam", "Momentum")}


def static_problems(node, attrs: dict, training: bool = False) -> list[str]:
    """Why ``node`` cannot be imported (for training with ``training``), judged from its op
    type and attributes alone."""
    if node.domain not in ("", "ai.onnx") and \
            node.op_type not in OTHER_DOMAINS.get(node.domain, ()) and \
            _declared_domain(node.op_type) != node.domain:
        return [f"ops of the domain {node.domain!r} are not supported"]
    conv = converter_of(node.op_type, training)
    if conv is None:
        return [f"the op {node.op_type} is not supported"]
    out = [f"the attribute {k}={v!r} is not supported" for k, v in attrs.items()
           if k not in conv.attrs]
    used = [i for i, name in enumerate(node.output) if name]
    if used and max(used) >= conv.outputs:
        out.append(f"output {max(used)} ({node.output[max(used)]!r}) is not supported; only "
                   f"the first {conv.outputs} output(s) of {node.op_type} can be used")
    if conv.check is not None:
        out.extend(conv.check(attrs))
    return out


def _declared_domain(op_type: str) -> str | None:
    """The ONNX domain of the declared op named ``op_type``, if there is one."""
    declared = declared_onnx_ops().get(op_type)
    return None if declared is None else onnx_name(declared)[0]


def guard_dtype(fn):
    """An op that rejects a dtype ONNX allows is a limitation of mlcbook, not a bad model."""
    def wrapped(cx, ins, attrs):
        try:
            return fn(cx, ins, attrs)
        except OpDTypeError as e:
            raise Unsupported(e.message) from None
    return wrapped


# --- the declared ops -----------------------------------------------------------------------------
def _declared(op) -> Converter:
    """The converter of a declared op: the ONNX node's inputs are the op's (one left out is
    not passed), its attributes the op's as ``op.onnx_attrs`` maps them
    (:class:`~mlcbook.ops.onnx_attrs.OnnxAttrs`; the same names where it is None)."""
    form = op.onnx_attrs or SAME_NAMES
    inputs = form.input_forms()
    # an attribute that older opsets give where newer ones take an input is read either way
    to_op = {form.onnx_name(a): a for a in op.attrs if a not in form.local and
             (a not in inputs or inputs[a].since > 1)}
    static = tuple(sorted(i.index for i in inputs.values()))

    @guard_dtype
    def convert(cx, ins, attrs):
        given = {to_op.get(k, k): v for k, v in attrs.items()}
        for a in form.dtypes:
            if a in given:
                given[a] = onnx_dtype(given[a], f"the attribute {form.onnx_name(a)!r}")
        args = [x for k, x in enumerate(ins) if x is not None and k not in static]
        try:    # (a value mlcbook's op does not take)
            for a, i in inputs.items():
                value = i.read(cx.static(i.index, form.onnx_name(a)), form.onnx_name(a))
                if value is not None:
                    given[a] = value
            if form.derive is not None:
                given.update(form.derive(given, [x.type for x in args],
                                         tuple(bool(o) for o in cx.node.output)))
            for k in form.onnx_only:
                given.pop(k, None)
            return cx.call(op.name, *args, **given)
        except OpAttributeError as e:
            raise Unsupported(e.message) from None
    accepted = frozenset(to_op) | frozenset(a for a in form.onnx_only if a not in inputs)
    return Converter(convert, accepted, static, form.outputs, form.check)


# --- elementwise (Clip: declared) -----------------------------------------------------------
@converter("Max", "Min")
@guard_dtype
def _max_min(cx, ins, attrs):
    op = "maximum" if cx.node.op_type == "Max" else "minimum"
    acc = ins[0]
    for k, x in enumerate(ins[1:]):
        last = k == len(ins) - 2
        acc = cx.call(op, acc, x, suffix="" if last else f"_{k}")
    return acc


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


def cast_value(cx: Context, x: Expr, dtype: str, attrs: dict) -> Expr:
    """``x`` converted to ``dtype`` as ONNX's Cast converts (``attrs``: its ``saturate`` and
    ``round_mode``): a low-bit type is decoded to float32 and encoded from numbers."""
    if x.dtype == dtype:
        return x
    if x.dtype in LOWBIT_DTYPES:
        last = dtype == "float32"
        x = cx.call("lowbit_decode", x, format=x.dtype, suffix="" if last else "_decode")
        if last:
            return x
    if dtype not in LOWBIT_DTYPES:
        return cx.call("cast", x, dtype=dtype)
    if x.dtype == "bool":
        x = cx.call("cast", x, dtype="float32", suffix="_float")
    return cx.call("lowbit_encode", x, format=dtype, saturate=bool(attrs.get("saturate", 1)),
                   round_mode=attrs.get("round_mode", "up"))


@converter("Cast", attrs=("to", "saturate", "round_mode"))
def _cast(cx, ins, attrs):
    return cast_value(cx, ins[0], onnx_dtype(attrs["to"], "the target type 'to'"), attrs)


@converter("Identity")
def _identity(cx, ins, attrs):
    return ins[0]


# --- nn (Gemm, Conv, AveragePool, BatchNormalization, LayerNormalization: declared) -------------
def pool_window(x: Expr, attrs: dict, kernel) -> dict:
    """The strides, dilations and pads of the ONNX conv or pool node ``attrs`` over ``x``
    (:func:`mlcbook.ops.nn.onnx_window`), for the converters that are written out."""
    return onnx_window(attrs, x.shape, kernel)


_POOL_ATTRS = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")


@converter("MaxPool", attrs=_POOL_ATTRS + ("storage_order",), check=check_auto_pad,
           outputs=2)
@guard_dtype
def _max_pool(cx, ins, attrs):
    kernel = tuple(attrs["kernel_shape"])
    window = dict(kernel_shape=kernel, ceil_mode=attrs.get("ceil_mode", 0),
                  **pool_window(ins[0], attrs, kernel))
    y = cx.call("max_pool", ins[0], **window)
    if len(cx.node.output) < 2 or not cx.node.output[1]:
        return y
    # the indices are an op of their own (it finds the max again): most models never ask
    return y, cx.call("max_pool_indices", ins[0], storage_order=attrs.get("storage_order", 0),
                      suffix="_indices", **window)


# --- reductions (Split, Pad: declared) -------------------------------------------------------
#: (ReduceProd and the composed reductions: :mod:`.onnx_tensor_ops`)
_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min"}


def reduce_axes(cx, attrs):
    """The axes of a Reduce* node (input 1 from opset 18, the attribute before), or None
    for all of them; ``()`` means "no reduction" (noop_with_empty_axes)."""
    axes = cx.ints(1, "axes")
    if axes is None and "axes" in attrs:
        axes = tuple(attrs["axes"])
    if not axes:
        return () if attrs.get("noop_with_empty_axes", 0) else None
    return axes


@converter(*_REDUCE, attrs=("axes", "keepdims", "noop_with_empty_axes"), static=(1,))
@guard_dtype
def _reduce(cx, ins, attrs):
    axes = reduce_axes(cx, attrs)
    if axes == ():
        return ins[0]
    return cx.call(_REDUCE[cx.node.op_type], ins[0], axes=axes, keepdims=attrs.get("keepdims", 1))


# --- constants and shapes ----------------------------------------------------------------------------
def _check_constant(attrs):
    bad = [k for k in ("value_string", "value_strings", "sparse_value") if k in attrs]
    return [f"{k} is not supported (only numeric dense tensors)" for k in bad]


@converter("Constant", attrs=("value", "value_float", "value_floats", "value_int",
                              "value_ints", "value_string", "value_strings", "sparse_value"),
           check=_check_constant)
def _constant(cx, ins, attrs):
    if "value" in attrs:
        onnx_dtype(attrs["value"].data_type, "the constant")
        return Constant(tensor_array(attrs["value"], "the value of a Constant node"))
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return Constant(np.asarray(attrs[key], dtype))
    raise Unsupported("the Constant node has no value")


__all__ = ["CONVERTERS", "TRAINING_CONVERTERS", "Converter", "converter", "converter_of",
           "guard_dtype", "pool_window", "static_problems"]
