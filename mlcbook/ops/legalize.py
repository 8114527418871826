"""Legalization: one op call with known input types -> a PrimFunc, through TE.

    >>> f = legalize_call("relu", [TensorType((4, 8))], {}, name="relu")
    >>> print(f)          # a PrimFunc relu(a, relu) with one block

Each op's legalization (``Op.legalize``, attached in :mod:`.lower_elementwise`,
:mod:`.lower_nn`, :mod:`.lower_transform`) receives TE placeholders for its inputs and the
normalized attributes, and returns the TE tensor(s) of its output(s). Arithmetic on the
storage types int8, uint8 and float16 happens in int32 / float32 and is cast back.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import LegalizeError, MLCError
from ..tir import expr as E
from ..tir.function import PrimFunc
from .registry import get
from .types import Attrs, TensorType, TupleType, Type

#: the dtype arithmetic on a storage dtype happens in
COMPUTE_DTYPE = {"int8": "int32", "uint8": "int32", "float16": "float32"}
_ARG_NAMES = "abcdefgh"


def compute_dtype(dtype: str) -> str:
    return COMPUTE_DTYPE.get(dtype, dtype)


def load(t, idx) -> E.PrimExpr:
    """``t[idx]`` in its compute dtype."""
    v = t[tuple(idx)]
    return E.cast(compute_dtype(t.dtype), v)


def store(value: E.PrimExpr, dtype: str) -> E.PrimExpr:
    """``value`` converted for storing into a ``dtype`` buffer (bool: nonzero is True)."""
    if dtype == "bool" and value.dtype != "bool":
        return value != E.const(0, value.dtype)
    return E.cast(dtype, value)


def bcast(shape: Sequence[int], idx: Sequence) -> tuple:
    """Indices into a tensor of ``shape`` broadcast to an output indexed by ``idx``."""
    lead = len(idx) - len(shape)
    return tuple(E.const(0) if s == 1 else i for s, i in zip(shape, idx[lead:]))


def axis_names(ndim: int) -> list[str]:
    return [f"i{d}" for d in range(ndim)]


def scalar_free(t: Type) -> Type:
    if isinstance(t, TensorType) and t.ndim == 0:
        return TensorType((1,), t.dtype)
    if isinstance(t, TupleType):
        return TupleType(tuple(scalar_free(f) for f in t.fields))
    return t


def _types(t: Type) -> tuple[TensorType, ...]:
    return t.fields if isinstance(t, TupleType) else (t,)


def legalize_call(op_name: str, arg_types: Sequence[TensorType], attrs: Mapping | None = None,
                  name: str | None = None) -> PrimFunc:
    """The PrimFunc computing ``op_name(*args, **attrs)`` in destination-passing style:
    parameters are the inputs, then the output(s)."""
    from .. import te
    op = get(op_name)
    attrs = op.normalize_attrs(attrs)
    out_type = op.infer_type(arg_types, attrs)
    if op.legalize is None:
        raise LegalizeError(f"op {op_name!r} has no legalization to loop IR; register one with "
                            "mb.ops.register_legalization")
    arg_types = list(arg_types)
    # a 0-d tensor has the memory of a (1,)-tensor and broadcasts like one; where an op's
    # result would change shape, the output check below reports it
    arg_types = [scalar_free(t) for t in arg_types]
    out_type = scalar_free(out_type)
    for t in arg_types + list(_types(out_type)):
        if t.size == 0:
            raise LegalizeError(f"{op_name}: a tensor of shape {t.shape} has no elements; "
                                "nothing to compile")
    placeholders = [te.placeholder(t.shape, t.dtype, name=_ARG_NAMES[k])
                    for k, t in enumerate(arg_types)]
    try:
        outs = op.legalize(placeholders, Attrs(attrs), out_type)
    except MLCError as e:
        raise LegalizeError(f"cannot legalize {op_name} with inputs "
                            f"{', '.join(map(str, arg_types))}: {e.message}") from None
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    for o, t in zip(outs, _types(out_type)):
        if o.shape != t.shape or o.dtype != t.dtype:
            raise LegalizeError(f"the legalization of {op_name} computes {o.shape} {o.dtype} "
                                f"but the op's type is {t}; the legalization is wrong")
    return te.create_prim_func(list(placeholders) + list(outs), name=name or op_name)
