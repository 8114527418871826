"""How loop-IR dtypes map to LLVM types, in registers and in memory.

``bool`` is ``i1`` in registers but one byte (``i8``) in memory, as numpy stores it.
``bfloat16`` is a ``float`` in registers (a float32 holding a bfloat16 value, or an unrounded
result of arithmetic on them) and its 16-bit pattern (``i16``) in memory: loads widen it,
stores round it (see :mod:`.llvm_expr`). Signed and unsigned integers share LLVM's ``iN``;
the instructions that differ (compare, divide, widen, convert) read the dtype.
"""

from __future__ import annotations

import llvmlite.ir as ir
import numpy as np

_REG = {"bool": ir.IntType(1), "int8": ir.IntType(8), "uint8": ir.IntType(8),
        "int16": ir.IntType(16), "uint16": ir.IntType(16), "int32": ir.IntType(32),
        "uint32": ir.IntType(32), "int64": ir.IntType(64), "uint64": ir.IntType(64),
        "float16": ir.HalfType(), "bfloat16": ir.FloatType(), "float32": ir.FloatType(),
        "float64": ir.DoubleType()}
_MEM = {**_REG, "bool": ir.IntType(8), "bfloat16": ir.IntType(16)}

PTR = ir.PointerType()
I32, I64, VOID = ir.IntType(32), ir.IntType(64), ir.VoidType()


def reg_type(dtype: str, lanes: int | None = None) -> ir.Type:
    """The LLVM type of a ``dtype`` value (a vector of ``lanes`` of them if given)."""
    t = _REG[dtype]
    return ir.VectorType(t, lanes) if lanes else t


def mem_type(dtype: str, lanes: int | None = None) -> ir.Type:
    """The LLVM type of a ``dtype`` element in memory."""
    t = _MEM[dtype]
    return ir.VectorType(t, lanes) if lanes else t


def itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize


def mangle(t: ir.Type) -> str:
    """The suffix LLVM intrinsics use for a type: ``f32``, ``v16f32``, ``i64``, ``p0``."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.PointerType):
        return "p0"
    if isinstance(t, ir.HalfType):
        return "f16"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    raise TypeError(f"no intrinsic mangling for {t}")
