"""Evaluate a loop-IR expression over whole numpy arrays: every variable bound to an array
(broadcast like numpy), the result an array of the expression's dtype.

    >>> x = var("x", "float32")
    >>> evaluate_expr(x * sigmoid(x), {x: np.array([-1.0, 0.0, 2.0], np.float32)})
    array([-0.26894143,  0.        ,  1.7615942 ], dtype=float32)

It has the semantics of :mod:`.scalar` (the reference evaluator's), one array at a time:
float arithmetic rounded to the expression's type at every operation (float32 in float32,
whose basic operations numpy rounds as IEEE does; math functions and narrower floats in
float64, then rounded),
integer arithmetic wrapping in the integer's own type, ``x // 0 == x % 0 == 0``, NaN-propagating
min/max, IEEE results where Python would raise. This is how an operator's own compute runs
in the graph interpreter and in constant folding (:mod:`mlcbook.ops.declare`).
"""

from __future__ import annotations

import math
from typing import Mapping

import ml_dtypes  # noqa: F401 - gives numpy the bfloat16 dtype by name
import numpy as np

from ..errors import TIRError
from .expr import (Binary, Buffer, BufferLoad, Call, Cast, Const, PrimExpr, Reinterpret,
                   Select, Unary, Var, is_float, is_int)
from .functor import ExprFunctor

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # as scalar._sigmoid: exp of a negative only, so neither side overflows
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


#: math function of the IR -> its numpy form (the array counterpart of scalar.MATH_IMPL)
ARRAY_IMPL = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
              "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf,
              "pow": np.power, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
              "round": np.round, "sin": np.sin, "cos": np.cos, "tan": np.tan,
              "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
              "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
              "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
              "bitwise_xor": np.bitwise_xor}

_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
            ">": np.greater, ">=": np.greater_equal}
_ARITH = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
          "min": np.minimum, "max": np.maximum}


def _held(dtype: str) -> type:
    """How a float of ``dtype`` is held: float32 and float64 as themselves (numpy's +, -, *,
    / and min/max of them are IEEE's, rounded once), the narrower floats in float64, rounded
    to their type after each operation."""
    return np.float32 if dtype == "float32" else np.float64


def _rounded(value: np.ndarray, dtype: str) -> np.ndarray:
    """A float value (held in float64, or float32) rounded to ``dtype`` and held as
    :func:`_held` says."""
    if dtype == "float64":
        return value
    return value.astype(dtype, copy=False).astype(_held(dtype), copy=False)


def _wide(value: np.ndarray) -> np.ndarray:
    """A value with its float32 widened to float64 (math functions compute in float64, then
    round: numpy's float32 exp and kin are not correctly rounded)."""
    return value.astype(np.float64) if value.dtype == np.float32 else value


class _ArrayEvaluator(ExprFunctor):
    """``expr(e)``: the value of ``e``, floats as arrays of :func:`_held` holding
    ``e.dtype``'s values, integers and bools in their own numpy type."""

    def __init__(self, env: Mapping[Var | Buffer, np.ndarray]):
        self.env = env

    def expr_Var(self, e: Var):
        try:
            value = np.asarray(self.env[e])
        except KeyError:
            raise TIRError(f"evaluate_expr: the variable {e.name!r} has no value; bind it "
                           "in env") from None
        return value.astype(_held(e.dtype)) if is_float(e.dtype) else value.astype(e.dtype)

    def unhandled_expr(self, e):
        if isinstance(e, Var):   # a subclass of Var: a reduce axis of a tensor expression
            return self.expr_Var(e)
        return super().unhandled_expr(e)

    def expr_BufferLoad(self, e: BufferLoad):
        data = self.env.get(e.buffer)
        if data is None:
            raise TIRError(f"evaluate_expr: the buffer {e.buffer.name!r} has no value; bind "
                           "it in env")
        value = self.direct(e, data)
        if value is None:
            # both branches of a select are evaluated: an index the select discards may lie
            # outside the buffer, so every index is clamped into it
            index = tuple(np.clip(self.expr(i), 0, n - 1)
                          for i, n in zip(e.indices, data.shape))
            value = data[index]
        return value.astype(_held(e.dtype), copy=False) if is_float(e.dtype) else value

    def direct(self, e: BufferLoad, data: np.ndarray) -> np.ndarray | None:
        """``data`` itself, reshaped to broadcast, when the load reads it at index grids
        ``arange(size)`` along increasing axes (or at 0 on a dimension of 1): an elementwise
        or broadcasting load needs no gather. None otherwise."""
        shape: list[int] = []
        last, rank = -1, 0
        for index, size in zip(e.indices, data.shape):
            grid = self.env.get(index) if isinstance(index, Var) else None
            if size == 1 and (isinstance(index, Const) or (grid is not None and grid.size == 1)):
                continue
            if grid is None or grid.size != size or grid.ndim == 0:
                return None
            axis = int(np.argmax(grid.shape))
            if axis <= last or not np.array_equal(grid.ravel(), np.arange(size)):
                return None
            shape.extend([1] * (axis - last - 1) + [size])
            last, rank = axis, grid.ndim
        if last < 0:
            return data.reshape(()) if data.size == 1 else None
        return data.reshape(shape + [1] * (rank - last - 1))

    def expr_Const(self, e: Const):
        if is_float(e.dtype):
            return _rounded(np.float64(e.value), e.dtype)
        return np.asarray(e.value).astype(e.dtype)

    def expr_Unary(self, e: Unary):
        a = self.expr(e.a)
        return np.logical_not(a) if e.op == "not" else np.negative(a)

    def expr_Binary(self, e: Binary):
        a, b = self.expr(e.a), self.expr(e.b)
        if e.op == "and":
            return np.logical_and(a, b)
        if e.op == "or":
            return np.logical_or(a, b)
        if e.op in _COMPARE:
            return _COMPARE[e.op](a, b)
        if e.op in ("//", "%"):
            safe = np.where(b == 0, np.ones_like(b), b)
            out = np.floor_divide(a, safe) if e.op == "//" else np.remainder(a, safe)
            return np.where(b == 0, np.zeros_like(out), out)
        out = _ARITH[e.op](a, b)
        return _rounded(out, e.dtype) if is_float(e.dtype) else out

    def expr_Select(self, e: Select):
        return np.where(self.expr(e.cond), self.expr(e.true_value), self.expr(e.false_value))

    def expr_Call(self, e: Call):
        out = ARRAY_IMPL[e.name](*(_wide(self.expr(a)) for a in e.args))
        return _rounded(out, e.dtype) if is_float(e.dtype) else out

    def expr_Reinterpret(self, e: Reinterpret):
        # (a C-ordered copy: ascontiguousarray would make a 0-d value 1-d)
        out = self.expr(e.value).astype(e.value.dtype, order="C").view(e.dtype)
        return out.astype(_held(e.dtype)) if is_float(e.dtype) else out

    def expr_Cast(self, e: Cast):
        src, dst = e.value.dtype, e.dtype
        v = self.expr(e.value)
        if dst == "bool":
            return v != 0
        if is_float(dst):
            return _rounded(v.astype(np.float64), dst)
        if is_int(dst) and is_float(src):
            # C truncates toward zero; NaN and out-of-range values have no integer
            return np.trunc(v).astype(dst)
        return v.astype(dst)


def evaluate_expr(expr: PrimExpr, env: Mapping[Var | Buffer, np.ndarray]) -> np.ndarray:
    """The value of ``expr`` with each :class:`Var` of ``env`` bound to an array (arrays
    broadcast against each other) and each :class:`Buffer` to its data (a load takes the
    elements at the indices' arrays), as an array of ``expr.dtype``."""
    with np.errstate(all="ignore"):
        return np.asarray(_ArrayEvaluator(env).expr(expr)).astype(expr.dtype)


__all__ = ["ARRAY_IMPL", "evaluate_expr"]
