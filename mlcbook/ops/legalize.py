"""Legalization: one op call with known input types -> a PrimFunc, through TE.

    >>> f = legalize_call("relu", [TensorType((4, 8))], {}, name="relu")
    >>> print(f)          # a PrimFunc relu(a, relu) with one block

Each op's legalization (``Op.legalize``: a declared op's compute, :mod:`.declare`; the others' attached in
:mod:`.lower`) receives TE
placeholders for its inputs and the normalized attributes, and returns the TE tensor(s)
of its output(s): it maps the op's ONNX-style attributes onto the operator library
:mod:`mlcbook.te.ops`, which computes the storage types (int8, uint8, int16, uint16,
float16, bfloat16) in int32 / float32 and casts back.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import te
from ..errors import LegalizeError, MLCError
from ..tir.function import PrimFunc
from .registry import get
from .types import Attrs, TensorType, TupleType, Type, storage_dtype

_ARG_NAMES = "abcdefgh"


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
    # ops such as Concat and Sum take any number of inputs: the ninth is named arg8, ...
    placeholders = [te.placeholder(t.shape, storage_dtype(t.dtype),
                                   name=_ARG_NAMES[k] if k < len(_ARG_NAMES) else f"arg{k}")
                    for k, t in enumerate(arg_types)]
    try:
        outs = op.legalize(placeholders, Attrs(attrs), out_type)
    except MLCError as e:
        raise LegalizeError(f"cannot legalize {op_name} with inputs "
                            f"{', '.join(map(str, arg_types))}: {e.message}") from None
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    # a 0-d result (a dot product, a full reduction) is stored as the (1,)-tensor it shares
    # memory with
    outs = [te.ops.reshape(o, (1,), name=o.name) if o.ndim == 0 and t.shape == (1,) else o
            for o, t in zip(outs, _types(out_type))]
    for o, t in zip(outs, _types(out_type)):
        if o.shape != t.shape or o.dtype != storage_dtype(t.dtype):
            raise LegalizeError(f"the legalization of {op_name} computes {o.shape} {o.dtype} "
                                f"but the op's type is {t}; the legalization is wrong")
    return te.create_prim_func(list(placeholders) + list(outs), name=name or op_name)
