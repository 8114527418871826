"""Expressions of the loop IR: typed, immutable, built with ordinary Python operators.

    >>> i = Var("i")                  # an int32 variable
    >>> e = i * 4 + 1                 # Python operators build IR
    >>> e.dtype
    'int32'
    >>> x = Var("x", "float32")
    >>> exp(x) * const(2.0, "float32")
    ...

Variables and buffers compare by identity (``a.same_as(b)``); ``==`` between expressions
builds an equality *expression*, as in TVM, so that ``select(i == j, ...)`` reads naturally.
Structural comparison lives in :mod:`mlcbook.tir.structural`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Union

import ml_dtypes  # noqa: F401 - registers the bfloat16 numpy dtype
import numpy as np

from ..printing import printer
from ..errors import DTypeMismatchError, ShapeError

# --- data types ----------------------------------------------------------------------------
# The one table of element types: the loop IR, the graphs and the ONNX importer all read it.
# bfloat16 is numpy's through ml_dtypes (imported here so np.dtype("bfloat16") resolves).
UNSIGNED_DTYPES = ("uint8", "uint16", "uint32", "uint64")
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
DTYPES = INT_DTYPES + FLOAT_DTYPES + ("bool",)
#: storage types whose arithmetic the tensor-expression ops do in a wider type, cast back on
#: store; bfloat16 values are float32 values rounded to bfloat16's 8-bit mantissa on store
STORAGE_COMPUTE_DTYPE = {"int8": "int32", "uint8": "int32", "int16": "int32", "uint16": "int32",
                         "float16": "float32", "bfloat16": "float32"}
#: types arithmetic may happen in
COMPUTE_DTYPES = tuple(d for d in DTYPES if d not in STORAGE_COMPUTE_DTYPE)


def check_dtype(dtype: Any) -> str:
    """Normalize a dtype given as a string or numpy dtype to its name, or raise."""
    name = getattr(dtype, "name", dtype)
    if isinstance(name, type):  # np.float32 the class
        name = name.__name__
    if name not in DTYPES:
        raise DTypeMismatchError(
            f"unknown dtype {dtype!r}; use one of {', '.join(DTYPES)}")
    return name


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


def is_int(dtype: str) -> bool:
    return dtype in INT_DTYPES


def is_unsigned(dtype: str) -> bool:
    """Whether ``dtype`` is an unsigned integer type (compared, divided, widened unsigned)."""
    return dtype in UNSIGNED_DTYPES


def bits(dtype: str) -> int:
    """The width of ``dtype`` in bits: ``bits("uint16") == 16`` (``bool`` is 1)."""
    return 1 if dtype == "bool" else 8 * np.dtype(dtype).itemsize


# --- base class with operator overloading -----------------------------------------------------
class PrimExpr:
    """Base of every expression. Subclasses are frozen dataclasses with a ``dtype``."""

    __slots__ = ()
    dtype: str

    # Identity hashing: Var and Buffer are identified by object, and other nodes may be
    # used as dict keys only by identity. Structural hashing is a separate function.
    __hash__ = object.__hash__

    def same_as(self, other: object) -> bool:
        return self is other

    def __add__(self, o): return _binary("+", self, o)
    def __radd__(self, o): return _binary("+", o, self)
    def __sub__(self, o): return _binary("-", self, o)
    def __rsub__(self, o): return _binary("-", o, self)
    def __mul__(self, o): return _binary("*", self, o)
    def __rmul__(self, o): return _binary("*", o, self)
    def __truediv__(self, o): return _binary("/", self, o)
    def __rtruediv__(self, o): return _binary("/", o, self)
    def __floordiv__(self, o): return _binary("//", self, o)
    def __rfloordiv__(self, o): return _binary("//", o, self)
    def __mod__(self, o): return _binary("%", self, o)
    def __rmod__(self, o): return _binary("%", o, self)
    def __neg__(self): return Unary("-", self)
    def __lt__(self, o): return _binary("<", self, o)
    def __le__(self, o): return _binary("<=", self, o)
    def __gt__(self, o): return _binary(">", self, o)
    def __ge__(self, o): return _binary(">=", self, o)
    def __eq__(self, o): return _binary("==", self, o)  # type: ignore[override]
    def __ne__(self, o): return _binary("!=", self, o)  # type: ignore[override]
    def __and__(self, o): return _binary("and", self, o)
    def __rand__(self, o): return _binary("and", o, self)
    def __or__(self, o): return _binary("or", self, o)
    def __ror__(self, o): return _binary("or", o, self)
    def __invert__(self): return Unary("not", self)

    def __bool__(self) -> bool:
        # `==` builds an expression; Python containers still need a truth value for it,
        # which is identity, so that IR nodes can be dict keys and list members.
        if isinstance(self, Binary) and self.op in ("==", "!="):
            return (self.a is self.b) == (self.op == "==")
        raise TypeError(
            "an IR expression has no truth value while the program is being built; "
            "use mb.tir.select(cond, a, b) or `&`/`|`/`~` instead of if/and/or/not")

    def __str__(self) -> str:
        return printer("tir.expr")(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self})"


@dataclass(frozen=True, eq=False, repr=False)
class Var(PrimExpr):
    """A scalar variable: a loop variable, a block iteration variable, ..."""

    name: str
    dtype: str = "int32"

    def __post_init__(self):
        object.__setattr__(self, "dtype", check_dtype(self.dtype))


@dataclass(frozen=True, eq=False, repr=False)
class Const(PrimExpr):
    """A constant of a given dtype: ``const(0.0, "float32")``."""

    value: Union[int, float, bool]
    dtype: str

    def __post_init__(self):
        dtype = check_dtype(self.dtype)
        object.__setattr__(self, "dtype", dtype)
        v = self.value
        if dtype == "bool":
            object.__setattr__(self, "value", bool(v))
        elif is_int(dtype):
            if isinstance(v, float) and not v.is_integer():
                raise DTypeMismatchError(
                    f"constant {v!r} is not an integer but its dtype is {dtype}; "
                    "use a float dtype or round the value")
            v = int(v)
            info = np.iinfo(dtype)
            if not info.min <= v <= info.max:
                # compiled code would wrap it, the interpreter would not: refuse it here
                raise DTypeMismatchError(
                    f"integer constant {v} does not fit {dtype} ([{info.min}, {info.max}]); "
                    f"Instead: make it smaller, or compute in int64 (e.g. T.int64({v}) with "
                    "int64 operands)")
            object.__setattr__(self, "value", v)
        else:
            object.__setattr__(self, "value", float(v))


#: binary operators, their result kind, and the dtypes they accept
ARITH_OPS = ("+", "-", "*", "/", "//", "%", "min", "max")
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")
LOGIC_OPS = ("and", "or")
BINARY_OPS = ARITH_OPS + CMP_OPS + LOGIC_OPS


@dataclass(frozen=True, eq=False, repr=False)
class Binary(PrimExpr):
    """``a op b`` for op in :data:`BINARY_OPS`.

    ``//`` and ``%`` are integer floor division and modulo (``-7 // 2 == -4``,
    ``-7 % 2 == 1``), and a divisor of 0 gives 0: ``x // 0 == x % 0 == 0``, as numpy gives.
    The interpreter, the simplifier and compiled code all follow this rule. ``/`` is for
    floats only and follows IEEE (``1.0 / 0.0 == inf``, ``0.0 / 0.0`` is NaN).

        >>> str(Binary("//", Var("i"), Const(4, "int32")))
        'i // 4'
    """

    op: str
    a: PrimExpr
    b: PrimExpr
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        if self.op not in BINARY_OPS:
            raise DTypeMismatchError(f"unknown binary operator {self.op!r}")
        ta, tb = self.a.dtype, self.b.dtype
        if ta != tb:
            raise DTypeMismatchError(
                f"operands of '{self.op}' have different dtypes: {self.a} is {ta} but "
                f"{self.b} is {tb}; insert mb.tir.cast(...) to make them agree")
        if self.op in LOGIC_OPS:
            if ta != "bool":
                raise DTypeMismatchError(
                    f"'{self.op}' needs bool operands, got {ta} ({self.a}); compare first, e.g. x > 0")
            out = "bool"
        elif self.op in CMP_OPS:
            out = "bool"
        else:
            if ta == "bool":
                raise DTypeMismatchError(
                    f"arithmetic '{self.op}' on bool operands ({self.a}); cast to an int type first")
            if self.op == "/" and is_int(ta):
                raise DTypeMismatchError(
                    f"'/' on integers ({self.a} / {self.b}) is ambiguous; use // for floor "
                    "division or cast to a float type")
            if self.op in ("//", "%") and is_float(ta):
                raise DTypeMismatchError(
                    f"'{self.op}' is integer floor division/modulo but {self.a} is {ta}; "
                    "use / and mb.tir.floor for floats")
            out = ta
        object.__setattr__(self, "dtype", out)


UNARY_OPS = ("-", "not")


@dataclass(frozen=True, eq=False, repr=False)
class Unary(PrimExpr):
    """``-a`` or ``not a``."""

    op: str
    a: PrimExpr
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        if self.op == "not" and self.a.dtype != "bool":
            raise DTypeMismatchError(f"'not' needs a bool operand, got {self.a.dtype} ({self.a})")
        if self.op == "-" and self.a.dtype == "bool":
            raise DTypeMismatchError(f"cannot negate the bool expression {self.a}")
        object.__setattr__(self, "dtype", self.a.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class Cast(PrimExpr):
    """Convert ``value`` to ``dtype`` (float -> int truncates toward zero, as C does)."""

    dtype: str
    value: PrimExpr

    def __post_init__(self):
        object.__setattr__(self, "dtype", check_dtype(self.dtype))


@dataclass(frozen=True, eq=False, repr=False)
class Reinterpret(PrimExpr):
    """The bits of ``value`` read as ``dtype``, a number type of the same width
    (``reinterpret("int32", x)`` of the float32 1.0 is 1065353216), as C's ``memcpy``."""

    dtype: str
    value: PrimExpr

    def __post_init__(self):
        dst, src = check_dtype(self.dtype), self.value.dtype
        # bfloat16 lives in registers as a float32, whose bits are not its own
        if {"bool", "bfloat16"} & {src, dst} or bits(src) != bits(dst):
            raise DTypeMismatchError(
                f"cannot reinterpret {src} ({self.value}) as {dst}: both must be number types "
                "of the same width, not bfloat16 (and bool has no bit pattern of its own; cast "
                "it)")
        object.__setattr__(self, "dtype", dst)


@dataclass(frozen=True, eq=False, repr=False)
class Select(PrimExpr):
    """``true_value if cond else false_value``; both branches may be evaluated."""

    cond: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        if self.cond.dtype != "bool":
            raise DTypeMismatchError(
                f"the condition of select must be bool, got {self.cond.dtype} ({self.cond})")
        if self.true_value.dtype != self.false_value.dtype:
            raise DTypeMismatchError(
                f"the branches of select have different dtypes: {self.true_value.dtype} and "
                f"{self.false_value.dtype}; cast one of them")
        object.__setattr__(self, "dtype", self.true_value.dtype)


#: math functions: name -> number of arguments. All take and return floats.
MATH_FUNCS = {"exp": 1, "log": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1, "sigmoid": 1, "erf": 1,
              "pow": 2, "abs": 1, "floor": 1, "ceil": 1, "round": 1, "sin": 1, "cos": 1, "tan": 1,
              "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "asinh": 1, "acosh": 1,
              "atanh": 1}
#: bitwise functions of two integers of one dtype (two's complement): name -> argument count
BIT_FUNCS = {"bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2}


@dataclass(frozen=True, eq=False, repr=False)
class Call(PrimExpr):
    """A math function call, ``exp(x)``; ``abs`` also accepts integers, and the bitwise
    functions of :data:`BIT_FUNCS` (``bitwise_and(i, j)``) take only integers."""

    name: str
    args: tuple[PrimExpr, ...]
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        arity = MATH_FUNCS.get(self.name, BIT_FUNCS.get(self.name))
        if arity is None:
            raise DTypeMismatchError(
                f"unknown math function {self.name!r}; known: "
                f"{', '.join([*MATH_FUNCS, *BIT_FUNCS])}")
        if len(self.args) != arity:
            raise DTypeMismatchError(
                f"{self.name} takes {arity} argument(s), got {len(self.args)}")
        t = self.args[0].dtype
        for a in self.args:
            if a.dtype != t:
                raise DTypeMismatchError(
                    f"arguments of {self.name} have different dtypes ({t} and {a.dtype})")
        if self.name in BIT_FUNCS:
            if not is_int(t):
                raise DTypeMismatchError(
                    f"{self.name} needs integer arguments, got {t} ({self.args[0]}); "
                    "bitwise functions take int8, uint8, int32 or int64")
        elif not is_float(t) and not (self.name == "abs" and is_int(t)):
            raise DTypeMismatchError(
                f"{self.name} needs a float argument, got {t} ({self.args[0]}); "
                f"use mb.tir.cast('float32', ...) first")
        object.__setattr__(self, "dtype", t)


@dataclass(frozen=True, eq=False, repr=False)
class BufferLoad(PrimExpr):
    """``buffer[indices]``: read one element."""

    buffer: "Buffer"
    indices: tuple[PrimExpr, ...]
    dtype: str = field(default="", init=False)

    def __post_init__(self):
        check_indices(self.buffer, self.indices)
        object.__setattr__(self, "dtype", self.buffer.dtype)


@dataclass(frozen=True, eq=False, repr=False)
class TensorCall(PrimExpr):
    """A call of a hardware tensor instruction sequence that code generation knows by ``op``
    (``"x86.vpdpbusd.16x4"``), on the tiles that start at each ``args`` load (a pointer, not a
    value). ``strides`` holds each argument buffer's row-major element strides; it is filled
    in when an intrinsic's ``impl`` is placed in a program. It is an ``int32`` expression
    used as a statement, ``Evaluate(TensorCall(...))``; the interpreters cannot run it (they
    run the intrinsic's ``desc`` instead, see :mod:`mlcbook.tir.tensor_intrin`).
    """

    op: str
    args: tuple["BufferLoad", ...]
    strides: tuple = ()
    dtype: str = field(default="int32", init=False)


# --- buffers --------------------------------------------------------------------------------
#: the largest buffer (bytes): offsets and sizes then never overflow 64-bit arithmetic
MAX_BUFFER_BYTES = 1 << 48

@dataclass(frozen=True, eq=False)
class Buffer:
    """A multi-dimensional array of one dtype. ``A[i, j]`` reads it.

    >>> A = Buffer("A", (128, 128), "float32")
    >>> A[0, 1].dtype
    'float32'

    ``scope`` names where it lives ("global", or "local" for a per-thread scratch buffer).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    scope: str = "global"

    __hash__ = object.__hash__

    def __post_init__(self):
        object.__setattr__(self, "dtype", check_dtype(self.dtype))
        shape = tuple(self.shape)
        for s in shape:
            if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
                raise ShapeError(
                    f"buffer {self.name!r} has shape {shape}; every dimension must be a "
                    "positive int (mlcbook compiles static shapes)")
        nbytes = math.prod(shape) * np.dtype(self.dtype).itemsize
        if nbytes > MAX_BUFFER_BYTES:
            raise ShapeError(
                f"buffer {self.name!r} has shape {shape}: {nbytes} bytes, more than the "
                f"{MAX_BUFFER_BYTES} (2**48) mlcbook addresses; Instead: use a smaller shape")
        object.__setattr__(self, "shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def same_as(self, other: object) -> bool:
        return self is other

    def __getitem__(self, idx) -> BufferLoad:
        if not isinstance(idx, tuple):
            idx = (idx,)
        return BufferLoad(self, tuple(as_expr(i, "int32") for i in idx))

    def __repr__(self) -> str:
        return f"Buffer({self.name!r}, {self.shape}, {self.dtype!r})"


def check_indices(buffer: Buffer, indices: tuple) -> None:
    if len(indices) != buffer.ndim:
        raise ShapeError(
            f"buffer {buffer.name!r} has {buffer.ndim} dimension(s) {buffer.shape} but is "
            f"indexed with {len(indices)} index(es); give one index per dimension")
    for i in indices:
        if not is_int(i.dtype):
            raise DTypeMismatchError(
                f"index {i} of buffer {buffer.name!r} has dtype {i.dtype}; indices must be "
                "integers (cast with mb.tir.cast('int32', ...))")


# --- constructors -------------------------------------------------------------------------------
def as_expr(value: Any, dtype: str | None = None) -> PrimExpr:
    """Turn a Python number into a :class:`Const` (of ``dtype`` if given), pass expressions through."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, bool):
        return Const(value, "bool")
    if isinstance(value, int):
        # a bare number too big for int32 is an int64 (it still must fit a given dtype)
        wide = not -2**31 <= value < 2**31
        return Const(value, dtype or ("int64" if wide else "int32"))
    if isinstance(value, float):
        if dtype is not None and not is_float(dtype):
            raise DTypeMismatchError(
                f"the float constant {value!r} is used with an {dtype} expression; "
                "cast the expression to a float type or use an int constant")
        return Const(value, dtype or "float32")
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return Const(value.item(), check_dtype(value.dtype))
    raise DTypeMismatchError(f"cannot use {value!r} of type {type(value).__name__} in an IR expression")


def _binary(op: str, a: Any, b: Any) -> PrimExpr:
    # a Python number takes the dtype of the expression beside it
    if not isinstance(a, PrimExpr):
        a = as_expr(a, b.dtype)
    if not isinstance(b, PrimExpr):
        b = as_expr(b, a.dtype)
    return Binary(op, a, b)


def const(value, dtype: str = "int32") -> Const:
    """``const(0.0, "float32")``: a typed constant."""
    return Const(value, dtype)


def var(name: str, dtype: str = "int32") -> Var:
    return Var(name, dtype)


def cast(dtype: str, value) -> PrimExpr:
    """``cast("float32", i)``; a cast to the value's own dtype returns it unchanged."""
    value = as_expr(value)
    dtype = check_dtype(dtype)
    return value if value.dtype == dtype else Cast(dtype, value)


def reinterpret(dtype: str, value) -> Reinterpret:
    """``value``'s bits as ``dtype`` (same width): ``reinterpret("int32", x)``."""
    return Reinterpret(dtype, as_expr(value))


def min(a, b) -> PrimExpr:  # noqa: A001 - the IR's own min, as mb.tir.min
    return _binary("min", a, b)


def max(a, b) -> PrimExpr:  # noqa: A001
    return _binary("max", a, b)


def select(cond, true_value, false_value) -> Select:
    """``select(x > 0, x, 0.0)``: pick a value by a condition."""
    cond = as_expr(cond)
    if isinstance(true_value, PrimExpr) and not isinstance(false_value, PrimExpr):
        false_value = as_expr(false_value, true_value.dtype)
    elif isinstance(false_value, PrimExpr) and not isinstance(true_value, PrimExpr):
        true_value = as_expr(true_value, false_value.dtype)
    return Select(cond, as_expr(true_value), as_expr(false_value))


if_then_else = select


def logical_and(a, b) -> PrimExpr:
    return _binary("and", a, b)


def logical_or(a, b) -> PrimExpr:
    return _binary("or", a, b)


def logical_not(a) -> PrimExpr:
    return Unary("not", as_expr(a))


def _math(name: str):
    def fn(*args):
        args = tuple(as_expr(a) for a in args)
        if len(args) == 2 and isinstance(args[1], Const) and args[1].dtype != args[0].dtype:
            args = (args[0], Const(args[1].value, args[0].dtype))
        return Call(name, args)
    fn.__name__ = name
    fn.__doc__ = f"``{name}(x)``: the math function {name} on a float expression."
    return fn


(exp, log, sqrt, rsqrt, tanh, sigmoid, erf, pow, abs, floor, ceil, round, sin, cos,  # noqa: A001
 tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh) = (_math(n) for n in MATH_FUNCS)


def _bitwise(name: str):
    def fn(a, b):
        a, b = as_expr(a), as_expr(b)
        if isinstance(b, Const) and b.dtype != a.dtype:
            b = Const(b.value, a.dtype)
        elif isinstance(a, Const) and a.dtype != b.dtype:
            a = Const(a.value, b.dtype)
        return Call(name, (a, b))
    fn.__name__ = name
    fn.__doc__ = (f"``{name}(a, b)``: the bits of two integers of one dtype "
                  f"{name.split('_')[1]}-ed (two's complement).")
    return fn


bitwise_and, bitwise_or, bitwise_xor = (_bitwise(n) for n in BIT_FUNCS)


def infinity(dtype: str) -> Const:
    """The largest value of ``dtype`` (inf for floats), identity of ``min``."""
    return Const(math.inf if is_float(dtype) else int_range(dtype)[1], dtype)


def neg_infinity(dtype: str) -> Const:
    """The smallest value of ``dtype``, identity of ``max``."""
    return Const(-math.inf if is_float(dtype) else int_range(dtype)[0], dtype)


def int_range(dtype: str) -> tuple[int, int]:
    """Inclusive ``(min, max)`` of an integer (or bool) dtype: ``int_range("int8") == (-128, 127)``."""
    if dtype == "bool":
        return 0, 1
    if dtype not in INT_DTYPES:
        raise KeyError(dtype)
    n = bits(dtype)
    return (0, 2**n - 1) if is_unsigned(dtype) else (-2**(n - 1), 2**(n - 1) - 1)
