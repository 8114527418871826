"""The names of mlcbook's script dialect, used as ``T.<name>`` (``from mlcbook.script import T``).

The parser reads these names from a function's *source*; the body of a ``@T.prim_func`` is
never run. So most names here are markers: calling ``T.grid`` or ``T.block`` in ordinary
Python raises a :class:`~mlcbook.errors.ScriptError` saying so. The expression
constructors (``T.float32(0.5)``, ``T.max``, ``T.exp``, ``T.Cast``, ``T.select``, ...) build
real IR expressions, and ``T.Buffer`` returns a description of a parameter, because Python
evaluates a parameter's annotation when the ``def`` statement runs.

    >>> @T.prim_func
    ... def add_one(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    ...     for i in range(8):
    ...         with T.block("B"):
    ...             vi = T.axis.spatial(8, i)
    ...             B[vi] = A[vi] + T.float32(1)
"""

from __future__ import annotations

import builtins
import difflib
from typing import NamedTuple

from ..errors import ScriptError
from ..tir import expr as _e

#: marks a module whose names are the dialect's (this one, and the namespace ``T`` users
#: import): the parser resolves ``T.<name>`` through any module that carries it
DIALECT = True


class BufferType(NamedTuple):
    """What ``T.Buffer((128, 128), "float32")`` evaluates to in a parameter annotation."""

    shape: tuple
    dtype: str = "float32"
    scope: str = "global"


def Buffer(shape, dtype: str = "float32", scope: str = "global") -> BufferType:  # noqa: N802
    """Parameter annotation ``A: T.Buffer((128, 128), "float32")`` (scope ``"global"`` unless given)."""
    return BufferType(tuple(shape) if isinstance(shape, (tuple, list)) else (shape,), dtype, scope)


def _marker(name: str):
    def marker(*args, **kwargs):
        raise ScriptError(
            f"T.{name}(...) only has a meaning inside a function decorated with @T.prim_func, "
            "whose source the parser reads (its body is never run); to build IR from Python, "
            "use mb.tir or mb.te")
    marker.__name__ = name.rsplit(".", 1)[-1]
    marker.__qualname__ = f"T.{name}"
    marker.__doc__ = f"``T.{name}``: a script-dialect marker, read by the parser."
    return marker


grid = _marker("grid")
serial = _marker("serial")
parallel = _marker("parallel")
vectorized = _marker("vectorized")
unroll = _marker("unroll")
block = _marker("block")
reads = _marker("reads")
writes = _marker("writes")
init = _marker("init")
where = _marker("where")
alloc_buffer = _marker("alloc_buffer")
allocate = _marker("allocate")
func_attr = _marker("func_attr")
block_attr = _marker("block_attr")
evaluate = _marker("evaluate")


class axis:  # noqa: N801 - read as T.axis.spatial
    """Block iteration variables: ``vi = T.axis.spatial(128, i)``, ``T.axis.reduce``,
    ``vi, vj = T.axis.remap("SS", [i, j])``."""

    spatial = staticmethod(_marker("axis.spatial"))
    reduce = staticmethod(_marker("axis.reduce"))
    remap = staticmethod(_marker("axis.remap"))


def _const_ctor(dtype: str):
    def ctor(value):
        if isinstance(value, str):
            value = builtins.float(value)
        return _e.Const(value, dtype)
    ctor.__name__ = dtype
    ctor.__doc__ = f"``T.{dtype}(value)``: a {dtype} constant."
    return ctor


float16, bfloat16, float32, float64 = (_const_ctor(d) for d in _e.FLOAT_DTYPES)
int8, uint8, int16, uint16, int32, uint32, int64, uint64 = (_const_ctor(d) for d in _e.INT_DTYPES)
bool = _const_ctor("bool")  # noqa: A001 - T.bool(True)


def Cast(dtype: str, value) -> _e.Cast:  # noqa: N802
    """``T.Cast("float32", i)``: convert a value to ``dtype``."""
    return _e.Cast(dtype, _e.as_expr(value))


def reinterpret(dtype: str, value) -> _e.Reinterpret:
    """``T.reinterpret("int32", x)``: the bits of a value read as ``dtype`` (same width)."""
    return _e.reinterpret(dtype, value)


max, min = _e.max, _e.min  # noqa: A001
select = if_then_else = _e.select
exp, log, sqrt, rsqrt, tanh, sigmoid, erf = _e.exp, _e.log, _e.sqrt, _e.rsqrt, _e.tanh, \
    _e.sigmoid, _e.erf
pow, abs, floor, ceil, round = _e.pow, _e.abs, _e.floor, _e.ceil, _e.round  # noqa: A001
sin, cos, tan, asin, acos, atan = _e.sin, _e.cos, _e.tan, _e.asin, _e.acos, _e.atan
sinh, cosh, asinh, acosh, atanh = _e.sinh, _e.cosh, _e.asinh, _e.acosh, _e.atanh
bitwise_and, bitwise_or, bitwise_xor = _e.bitwise_and, _e.bitwise_or, _e.bitwise_xor


def tensor_call(op: str, *tiles) -> _e.TensorCall:
    """``T.tensor_call("x86.dot_u8i8.8x4", A[0], B[0, 0], C[0])``: a hardware tensor
    instruction on the tiles starting at each load (an intrinsic's ``impl``)."""
    return _e.TensorCall(op, tuple(tiles))


#: every ``T.<name>`` the parser knows (nested ones dotted), for "did you mean" hints
NAMES = ("prim_func", "ir_module", "Buffer", "grid", "serial", "parallel", "vectorized",
         "unroll", "block", "axis.spatial", "axis.reduce", "axis.remap", "reads", "writes",
         "init", "where", "alloc_buffer", "allocate", "func_attr", "block_attr", "evaluate",
         *_e.DTYPES, "Cast", "reinterpret",
         "max", "min", "select", "if_then_else", "tensor_call", *_e.MATH_FUNCS, *_e.BIT_FUNCS)


def __getattr__(name: str):
    close = difflib.get_close_matches(name, NAMES, n=1)
    hint = f"; did you mean T.{close[0]}?" if close else ""
    raise AttributeError(f"T has no name {name!r}{hint}")
