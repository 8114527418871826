"""Math functions of the loop IR (``exp``, ``tanh``, ``erf``, ...) as LLVM code.

Where LLVM has an intrinsic (``llvm.exp.f32``, ``llvm.sqrt.v16f32``, ...) it is used, and
LLVM lowers it to an instruction or a libm call; ``tanh``, ``erf``, ``tan``, the inverse
and hyperbolic trigonometric functions call libm (``tanhf``/``erff``... for float32) directly, lane by lane for vectors. float16 is computed
in float32 and rounded back, as numpy does.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..tir.expr import is_int, is_unsigned
from .llvm_types import I32, reg_type

_INTRINSIC = {"exp": "llvm.exp", "log": "llvm.log", "sqrt": "llvm.sqrt", "pow": "llvm.pow",
              "floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.roundeven",
              "sin": "llvm.sin", "cos": "llvm.cos"}
#: the bitwise functions: one LLVM instruction each, on integers or vectors of them
_BITWISE = {"bitwise_and": "and_", "bitwise_or": "or_", "bitwise_xor": "xor"}
_LIBM = {n: (n + "f", n) for n in ("tanh", "erf", "tan", "asin", "acos", "atan", "sinh", "cosh",
                                     "asinh", "acosh", "atanh")}


def emit_math(em, name: str, dtype: str, xs: list) -> ir.Value:
    """Emit ``name(*xs)`` for ``dtype`` operands (scalars or vectors) with emitter ``em``."""
    B = em.b
    if name in _BITWISE:
        return getattr(B, _BITWISE[name])(xs[0], xs[1])
    lanes = em.lanes_of(xs[0])
    if dtype == "float16":
        wide = [B.fpext(x, reg_type("float32", lanes)) for x in xs]
        return B.fptrunc(emit_math(em, name, "float32", wide), reg_type("float16", lanes))
    if name == "abs":
        if is_unsigned(dtype):
            return xs[0]
        if is_int(dtype):
            return em.intrinsic("llvm.abs", [xs[0], ir.Constant(ir.IntType(1), 0)])
        return em.intrinsic("llvm.fabs", xs)
    fl = em.fflags
    if name in _INTRINSIC:
        return em.intrinsic(_INTRINSIC[name], xs)
    if name == "rsqrt":
        return B.fdiv(em.like(xs[0], 1.0), em.intrinsic("llvm.sqrt", xs), flags=fl)
    if name == "sigmoid":
        one = em.like(xs[0], 1.0)
        e = em.intrinsic("llvm.exp", [B.fneg(xs[0], flags=fl)])
        return B.fdiv(one, B.fadd(one, e, flags=fl), flags=fl)
    if name in _LIBM:
        fname = _LIBM[name][0 if dtype == "float32" else 1]
        st = reg_type(dtype)
        fn = em.cg.declare(fname, ir.FunctionType(st, [st]))
        if lanes is None:
            return B.call(fn, xs)
        out = ir.Constant(xs[0].type, ir.Undefined)
        for k in range(lanes):
            lane = B.extract_element(xs[0], ir.Constant(I32, k))
            out = B.insert_element(out, B.call(fn, [lane]), ir.Constant(I32, k))
        return out
    raise ValueError(f"no code generation for math function {name!r}")
