"""Elementwise operators: unary math and binary arithmetic with numpy broadcasting.

    >>> y = add(x, bias)            # (4, 3) + (3,) -> (4, 3)
    >>> z = exp(negative(y))

A binary operator takes two tensors, or a tensor and a Python number (which takes the
tensor's dtype). Both tensors must have the same dtype: there is no implicit promotion,
cast one with :func:`cast`.
"""

from __future__ import annotations

from ...errors import TEError
from ...tir import expr as _e
from ..tensor import Tensor
from ._util import (axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    compute_named)


def _map(x: Tensor, fn, name: str) -> Tensor:
    return compute_named(x.shape, axis_names(x.ndim), lambda *idx: fn(x[idx]), name)


def _float_only(x: Tensor, op: str) -> None:
    if not _e.is_float(x.dtype):
        raise TEError(f"{op}: tensor {x.name!r} has dtype {x.dtype} but {op} needs a float "
                      f"tensor; cast it first, e.g. ops.cast({x.name}, 'float32')")


def _unary(op: str, fn):
    def unary(x: Tensor, name: str = op) -> Tensor:
        check_tensor(x, op, "x")
        if op not in ("negative", "abs"):
            _float_only(x, op)
        return _map(x, fn, name)

    unary.__name__ = unary.__qualname__ = op
    unary.__doc__ = f"``{op}(x)`` elementwise, like ``numpy.{_NUMPY.get(op, op)}``."
    return unary


_NUMPY = {"rsqrt": "reciprocal(numpy.sqrt(x))", "sigmoid": "(1 / (1 + exp(-x)))",
          "erf": "(scipy.special.erf)"}

exp = _unary("exp", _e.exp)
log = _unary("log", _e.log)
sqrt = _unary("sqrt", _e.sqrt)
rsqrt = _unary("rsqrt", _e.rsqrt)
tanh = _unary("tanh", _e.tanh)
sigmoid = _unary("sigmoid", _e.sigmoid)
erf = _unary("erf", _e.erf)
floor = _unary("floor", _e.floor)
ceil = _unary("ceil", _e.ceil)
negative = _unary("negative", lambda v: -v)
abs = _unary("abs", _e.abs)  # noqa: A001 - ops.abs, like numpy.abs


def cast(x: Tensor, dtype: str, name: str = "cast") -> Tensor:
    """``x.astype(dtype)``: float -> int truncates toward zero."""
    check_tensor(x, "cast", "x")
    dtype = _e.check_dtype(dtype)
    return _map(x, lambda v: _e.cast(dtype, v), name)


def clip(x: Tensor, a_min, a_max, name: str = "clip") -> Tensor:
    """``numpy.clip(x, a_min, a_max)`` with scalar bounds."""
    check_tensor(x, "clip", "x")
    return _map(x, lambda v: _e.min(_e.max(v, a_min), a_max), name)


def _binary(op: str, fn, doc: str):
    def binary(a, b, name: str = op) -> Tensor:
        if not isinstance(a, Tensor) and not isinstance(b, Tensor):
            raise TEError(f"{op}: at least one of the operands must be a te tensor, got "
                          f"{a!r} and {b!r}")
        for arg, v in (("a", a), ("b", b)):
            if not isinstance(v, (Tensor, int, float)) or isinstance(v, bool):
                raise TEError(f"{op}: operand {arg} is {v!r}; give a te tensor or a number")
        if isinstance(a, Tensor) and isinstance(b, Tensor) and a.dtype != b.dtype:
            raise TEError(f"{op}: {a.name!r} is {a.dtype} but {b.name!r} is {b.dtype}; cast one "
                          f"of them, e.g. ops.cast({b.name}, {a.dtype!r})")
        dtype = a.dtype if isinstance(a, Tensor) else b.dtype
        if op in ("divide", "power"):
            for v in (a, b):
                if isinstance(v, Tensor):
                    _float_only(v, op)
        shapes = [v.shape for v in (a, b) if isinstance(v, Tensor)]
        out_shape = broadcast_shapes(op, *shapes)

        def operand(v, idx):
            if isinstance(v, Tensor):
                return v[broadcast_indices(v.shape, idx)]
            return _e.as_expr(v, dtype)

        return compute_named(out_shape, axis_names(len(out_shape)),
                             lambda *idx: fn(operand(a, idx), operand(b, idx)), name)

    binary.__name__ = binary.__qualname__ = op
    binary.__doc__ = doc
    return binary


add = _binary("add", lambda x, y: x + y, "``a + b`` with numpy broadcasting.")
subtract = _binary("subtract", lambda x, y: x - y, "``a - b`` with numpy broadcasting.")
multiply = _binary("multiply", lambda x, y: x * y, "``a * b`` with numpy broadcasting.")
divide = _binary("divide", lambda x, y: x / y,
                 "``a / b`` with numpy broadcasting (float tensors only).")
maximum = _binary("maximum", _e.max, "``numpy.maximum(a, b)`` with broadcasting.")
minimum = _binary("minimum", _e.min, "``numpy.minimum(a, b)`` with broadcasting.")
power = _binary("power", _e.pow, "``a ** b`` with numpy broadcasting (float tensors only).")
