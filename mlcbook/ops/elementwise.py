"""Broadcasting ops and conversions: arithmetic, comparisons, logic, bits, ``where``, ``cast``,
``bitcast`` (the unary math and activations are declared in :mod:`.unary`), all declared
from their te computes.

    >>> get("add").reference(np.array([1.0, 2.0]), np.array(3.0))
    array([4., 5.])

Binary ops broadcast like numpy. Integer ``div`` truncates toward zero (ONNX's rule, which
is C's), unlike numpy's ``//``.
"""

from __future__ import annotations

from ..errors import OpDTypeError, OpShapeError
from ..te import ops as T
from ..tir import expr as E
from ..tir.expr import bits
from . import declare
from ._infer import INTS, NUMBERS, broadcast_shapes, require_dtype, same_dtype
from .registry import REQUIRED, OpKind
from .types import FORMATS, LOWBIT_DTYPES, check_graph_dtype, storage_dtype


def _width(dtype: str) -> int:
    """The bits of one element: a bool is stored as a byte, a low-bit type has its own."""
    return 8 if dtype == "bool" else FORMATS[dtype].bits if dtype in FORMATS else bits(dtype)


def _bitcast_check(types, attrs):
    x, dtype = types[0], check_graph_dtype(attrs["dtype"])
    if dtype == "bool" or _width(x.dtype) != _width(dtype):
        raise OpDTypeError(f"bitcast: a {x.dtype} tensor cannot be read as {dtype}; the two "
                           "types must have the same width (bool only as the source). "
                           "Instead: cast it to convert the values")
    if "bfloat16" in (x.dtype, dtype) and {x.dtype, dtype} != {"bfloat16"}:
        raise OpDTypeError(f"bitcast: mlcbook does not read bfloat16 bits as {dtype} or "
                           f"other bits as bfloat16 ({x.dtype} -> {dtype})")


# a low-bit type is read and written as its bytes, the low bits of a uint8
declare.op("bitcast", lambda x, dtype, name: T.bitcast(x, storage_dtype(dtype), name=name),
           kind=OpKind.ELEMWISE, attrs={"dtype": REQUIRED}, check=_bitcast_check,
           dtype_attr="dtype", onnx="BitCast",
           onnx_attrs=declare.OnnxAttrs(names={"dtype": "to"}, dtypes=("dtype",)),
           doc="each element's bits read as `dtype`, a type of the same width (numpy's view)")


def _cast_check(types, attrs):
    for d in (types[0].dtype, check_graph_dtype(attrs["dtype"])):
        if d in LOWBIT_DTYPES:
            raise OpDTypeError(f"cast does not convert the low-bit type {d}; Instead: use the "
                               "ops lowbit_decode (to float32) and lowbit_encode (from numbers)")


# (ONNX's Cast also converts the low-bit types, in two ops: its import is written out)
declare.op("cast", T.cast, kind=OpKind.ELEMWISE, attrs={"dtype": REQUIRED}, check=_cast_check,
           onnx="Cast", onnx_attrs=declare.OnnxAttrs(names={"dtype": "to"}, dtypes=("dtype",)),
           doc="convert to `dtype` (float -> int truncates toward zero)")


# --- binary, broadcasting: declared with their te.ops computes --------------------------------
def _broadcast(name: str, dtypes=NUMBERS, onnx: str | None = None, check=None, attrs=None,
               num_inputs=(2, 2), grad=None, doc: str = "") -> None:
    declare.op(name, getattr(T, name), kind=OpKind.BROADCAST, attrs=attrs,
               num_inputs=num_inputs, check=check or declare.same_dtype_in(name, dtypes),
               onnx=onnx, grad=grad, doc=doc)


# the derivatives: one formula per input, of (a, b, the output y, its gradient g)
_broadcast("add", onnx="Add", doc="x + y",
           grad=(lambda a, b, y, g: g, lambda a, b, y, g: g))
_broadcast("sub", onnx="Sub", doc="x - y",
           grad=(lambda a, b, y, g: g, lambda a, b, y, g: -g))
_broadcast("mul", onnx="Mul", doc="x * y",
           grad=(lambda a, b, y, g: g * b, lambda a, b, y, g: g * a))
_broadcast("div", onnx="Div", doc="x / y (integers: truncated toward zero)",
           grad=(lambda a, b, y, g: g / b, lambda a, b, y, g: -(g * y) / b))
# ONNX's Max and Min take any number of inputs: their import is written out, folding them
# pairwise. Ties send the gradient to the first input.
_broadcast("maximum", onnx="Max", doc="elementwise max",
           grad=(lambda a, b, y, g: E.select(a < b, 0.0, g),
                 lambda a, b, y, g: E.select(a < b, g, 0.0)))
_broadcast("minimum", onnx="Min", doc="elementwise min",
           grad=(lambda a, b, y, g: E.select(a > b, 0.0, g),
                 lambda a, b, y, g: E.select(a > b, g, 0.0)))
_broadcast("equal", NUMBERS + ("bool",), onnx="Equal", doc="x == y")
_broadcast("less", onnx="Less", doc="x < y")
_broadcast("greater", onnx="Greater", doc="x > y")
_broadcast("greater_equal", onnx="GreaterOrEqual", doc="x >= y")
_broadcast("less_equal", onnx="LessOrEqual", doc="x <= y")
_broadcast("logical_and", ("bool",), onnx="And", doc="x and y")
_broadcast("logical_or", ("bool",), onnx="Or", doc="x or y")
_broadcast("logical_xor", ("bool",), onnx="Xor", doc="x xor y")
_broadcast("mod", onnx="Mod", attrs={"fmod": 0},
           doc="remainder with the divisor's sign (fmod=0) or the dividend's (fmod=1)")
for _name, _onnx in (("bitwise_and", "BitwiseAnd"), ("bitwise_or", "BitwiseOr"),
                     ("bitwise_xor", "BitwiseXor")):
    _broadcast(_name, INTS, onnx=_onnx, doc=f"x {_name[8:]} y, bit by bit, of integers")


_broadcast("bitshift", onnx="BitShift", attrs={"direction": "LEFT"},
           check=declare.same_dtype_in("bitshift", INTS,
                                       declare.one_of("bitshift", "direction", ("LEFT", "RIGHT"))),
           doc="x << y or x >> y (direction LEFT or RIGHT); a shift outside [0, bits) gives 0, "
               "or -1 for a negative x shifted right")


def _check_pow(types, attrs):
    require_dtype("pow", types[0], NUMBERS, "base")
    require_dtype("pow", types[1], NUMBERS, "exponent")


_broadcast("pow", onnx="Pow", check=_check_pow,
           doc="x ** y; the result has the base's dtype, the exponent may have another")


def _check_where(types, attrs):
    require_dtype("where", types[0], ("bool",), "condition")
    same_dtype("where", types[1:])


_broadcast("where", onnx="Where", check=_check_where, num_inputs=(3, 3),
           grad=(None, lambda c, a, b, y, g: E.select(c, g, 0.0),
                 lambda c, a, b, y, g: E.select(c, 0.0, g)),
           doc="x where cond else y, broadcasting all three")


def _check_prelu(types, attrs):
    x, slope = types
    declare.same_dtype_in("prelu", NUMBERS)(types, attrs)   # unsigned: never below zero
    if broadcast_shapes("prelu", x.shape, slope.shape) != x.shape:
        raise OpShapeError(f"prelu: the slope's shape {slope.shape} must broadcast to the "
                           f"input's {x.shape}, not widen it")


_broadcast("prelu", onnx="PRelu", check=_check_prelu,
           grad=(lambda x, s, y, g: E.select(x < 0, g * s, g),
                 lambda x, s, y, g: E.select(x < 0, g * x, 0.0)),
           doc="x if x >= 0 else slope * x (the slope broadcasts to x)")
