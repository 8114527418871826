"""Legalizations of the elementwise and broadcasting ops (and batch_norm, which is one).

Each maps output indices to a scalar expression of broadcast input loads, computed in the
compute dtype (:func:`.legalize.compute_dtype`) and cast back to the output dtype.
"""

from __future__ import annotations

import math

from ..te.tensor import compute_named
from ..tir import expr as E
from .legalize import axis_names, bcast, compute_dtype, load, store
from .registry import register_legalization


def _map(name, ins, out_type, fn):
    """out[idx] = fn(*loads of the broadcast inputs at idx)."""
    shape = out_type.shape

    def body(*idx):
        return store(fn(*(load(t, bcast(t.shape, idx, shape)) for t in ins)), out_type.dtype)

    return compute_named(shape, axis_names(len(shape)), body, name)


def _c(value, like: E.PrimExpr) -> E.Const:
    """A constant of ``like``'s dtype (ints are rounded toward zero, as a cast would)."""
    if E.is_int(like.dtype):
        value = int(value)
    return E.const(value, like.dtype)


_UNARY = {
    "neg": lambda v, a: -v,
    "abs": lambda v, a: E.abs(v),
    "exp": lambda v, a: E.exp(v),
    "log": lambda v, a: E.log(v),
    "sqrt": lambda v, a: E.sqrt(v),
    "reciprocal": lambda v, a: _c(1.0, v) / v,
    "relu": lambda v, a: E.max(v, _c(0, v)),
    "sigmoid": lambda v, a: E.sigmoid(v),
    "tanh": lambda v, a: E.tanh(v),
    "erf": lambda v, a: E.erf(v),
    "leaky_relu": lambda v, a: E.select(v < _c(0, v), v * _c(a["alpha"], v), v),
}


def _gelu(v, a):
    half, one = _c(0.5, v), _c(1.0, v)
    if a["approximate"] == "tanh":
        inner = _c(math.sqrt(2 / math.pi), v) * (v + _c(0.044715, v) * v * v * v)
        return half * v * (one + E.tanh(inner))
    return half * v * (one + E.erf(v * _c(1 / math.sqrt(2), v)))


def _clip(v, a):
    if "min" in a:
        v = E.max(v, _c(a["min"], v))
    if "max" in a:
        v = E.min(v, _c(a["max"], v))
    return v


def _unary_legalization(op, fn):
    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return _map(op, ins, out_type, lambda v: fn(v, attrs))
    return legalize


for _op, _fn in list(_UNARY.items()) + [("gelu", _gelu), ("clip", _clip)]:
    _unary_legalization(_op, _fn)


@register_legalization("cast")
def _cast(ins, attrs, out_type):
    x = ins[0]

    def body(*idx):
        v = x[idx]
        if out_type.dtype == "bool":
            return v if v.dtype == "bool" else v != E.const(0, v.dtype)
        if v.dtype == "float64" and out_type.dtype == "float16":
            # through float32: the JIT has no direct double -> half conversion routine
            v = E.cast("float32", v)
        return E.cast(out_type.dtype, v)

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "cast")


def _trunc_div(a, b):
    """Integer division rounding toward zero (C's, ONNX's) from floor division."""
    q = a // b
    fix = (a % b != _c(0, a)) & ((a < _c(0, a)) != (b < _c(0, b)))
    return E.select(fix, q + _c(1, q), q)


_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b if E.is_float(a.dtype) else _trunc_div(a, b),
    "maximum": E.max,
    "minimum": E.min,
    "equal": lambda a, b: a == b,
    "less": lambda a, b: a < b,
    "greater": lambda a, b: a > b,
}


def _binary_legalization(op, fn):
    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return _map(op, ins, out_type, fn)
    return legalize


for _op, _fn in _BINARY.items():
    _binary_legalization(_op, _fn)


@register_legalization("pow")
def _pow(ins, attrs, out_type):
    def fn(a, b):
        if E.is_float(a.dtype):
            return E.pow(a, E.cast(a.dtype, b))
        return E.cast(a.dtype, E.pow(E.cast("float64", a), E.cast("float64", b)))
    return _map("pow", ins, out_type, fn)


@register_legalization("where")
def _where(ins, attrs, out_type):
    return _map("where", ins, out_type, lambda c, x, y: E.select(c, x, y))


@register_legalization("batch_norm")
def _batch_norm(ins, attrs, out_type):
    x = ins[0]
    dt = compute_dtype(x.dtype)
    eps = E.const(attrs["epsilon"], dt)

    def body(*idx):
        c = (idx[1],)
        scale, bias, mean, var = (load(t, c) for t in ins[1:])
        return store((load(x, idx) - mean) / E.sqrt(var + eps) * scale + bias, x.dtype)

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "batch_norm")


