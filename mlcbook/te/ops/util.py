"""Helpers shared by the operator families and the graph legalizations: argument checks,
broadcasting, index arithmetic, storage and compute dtypes."""

from __future__ import annotations

from typing import Sequence

from ...errors import MLCError, TEAttributeError, TEError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor, compute_named

__all__ = ["axis_names", "check_tensor", "normalize_axis", "normalize_axes", "broadcast_shapes",
           "broadcast_indices", "pair", "ints", "scaled", "clamp", "compute_named", "prod",
           "COMPUTE_DTYPE", "compute_dtype", "load", "store", "const_like", "and_all",
           "reduce_stage", "trunc_div", "need_rank", "is_int_value"]

#: storage dtypes whose arithmetic happens in a wider dtype, the result cast back
COMPUTE_DTYPE = _e.STORAGE_COMPUTE_DTYPE


def compute_dtype(dtype: str) -> str:
    """The dtype arithmetic on ``dtype`` values happens in: ``compute_dtype("int8") == "int32"``."""
    return COMPUTE_DTYPE.get(dtype, dtype)


def load(t: Tensor, idx) -> _e.PrimExpr:
    """``t[idx]`` in its compute dtype (unchanged for float32, int32, ...)."""
    return _e.cast(compute_dtype(t.dtype), t[tuple(idx)])


def store(value: _e.PrimExpr, dtype: str) -> _e.PrimExpr:
    """``value`` converted for storing into a ``dtype`` tensor (bool: nonzero is True)."""
    if dtype == "bool" and value.dtype != "bool":
        return value != _e.const(0, value.dtype)
    return _e.cast(dtype, value)


def const_like(value, like: _e.PrimExpr) -> _e.Const:
    """A constant of ``like``'s dtype (ints rounded toward zero, as a cast would)."""
    return _e.const(int(value) if _e.is_int(like.dtype) else value, like.dtype)


def trunc_div(a: _e.PrimExpr, b: _e.PrimExpr) -> _e.PrimExpr:
    """Integer ``a / b`` rounded toward zero (C's and ONNX's rule), from the IR's floor
    division: ``trunc_div(-7, 2)`` is -3 where ``-7 // 2`` is -4."""
    q = a // b
    fix = (a % b != const_like(0, a)) & ((a < const_like(0, a)) != (b < const_like(0, b)))
    return _e.select(fix, q + const_like(1, q), q)


def and_all(conds):
    """``c0 & c1 & ...`` of the conditions, or None when there are none."""
    out = None
    for c in conds:
        out = c if out is None else out & c
    return out


def axis_names(ndim: int) -> list[str]:
    """``i0, i1, ...``: the index names of an operator's output, shown in its loops."""
    return [f"i{d}" for d in range(ndim)]


def check_tensor(x, op: str, arg: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TEError(f"{op}: argument {arg} is {x!r}, not a te tensor; make one with "
                      "te.placeholder or another operator")
    return x


def need_rank(op: str, shape, least: int, what: str = "the data", layout: str = "") -> None:
    """Raise unless a tensor of ``shape`` (``what`` it is to ``op``) has at least ``least``
    dimensions (``layout`` says what they are)."""
    if len(shape) < least:
        raise TEShapeError(f"{op}: {what} has shape {tuple(shape)}, of rank {len(shape)}; it "
                           f"needs at least {least} dimensions{f' {layout}' if layout else ''}")


def is_int_value(v) -> bool:
    """Whether ``v`` is an integer (a Python or numpy int; not a bool)."""
    return not isinstance(v, bool) and hasattr(v, "__index__")


def normalize_axis(axis: int, ndim: int, op: str) -> int:
    """``axis`` in ``[-ndim, ndim)`` as a non-negative int."""
    if not is_int_value(axis):
        raise TEAttributeError(f"{op}: axis {axis!r} is not an int")
    axis = axis.__index__()
    if not -ndim <= axis < ndim:
        raise TEShapeError(f"{op}: axis {axis} is out of range for a tensor with {ndim} "
                           f"dimension(s); use an axis in [{-ndim}, {ndim - 1}]")
    return axis % ndim


def normalize_axes(axis, ndim: int, op: str) -> tuple[int, ...]:
    """``None`` (all axes), one int, or a sequence of ints -> sorted distinct non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = [axis] if not isinstance(axis, (tuple, list)) else list(axis)
    out = [normalize_axis(a, ndim, op) for a in axes]
    if len(set(out)) != len(out):
        raise TEShapeError(f"{op}: axis {axis!r} names a dimension twice")
    return tuple(sorted(out))


def broadcast_shapes(op: str, *shapes: Sequence[int],
                     error: type[MLCError] = TEShapeError) -> tuple[int, ...]:
    """The numpy broadcast of ``shapes``: right-aligned, each pair of sizes equal or one is 1.

    A mismatch raises ``error`` naming ``op`` and every shape; the graph layer
    (:mod:`mlcbook.ops`) passes its own ``OpShapeError`` so one rule serves both layers.

        >>> broadcast_shapes("add", (3, 1), (4,))
        (3, 4)
    """
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[len(s) - ndim + d] for s in shapes if len(s) - ndim + d >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            shown = " and ".join(str(tuple(s)) for s in shapes)
            raise error(
                f"{op}: shapes {shown} cannot be broadcast: dimension {d} of the result would "
                f"need sizes {sorted(sizes)} to agree; each pair of trailing dimensions must be "
                "equal or one of them 1")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def broadcast_indices(shape: Sequence[int], out_idx: Sequence,
                      out_shape: Sequence[int] | None = None) -> tuple:
    """Indices into a tensor of ``shape`` broadcast to the output indexed by ``out_idx``.

    A dimension of 1 is read at 0, except where the output's dimension (``out_shape``, when
    given) is 1 too: there the output's own index is kept, so that ``add`` on a batch of 1
    reads ``x[n, c]``, not ``x[0, c]``, and stays elementwise in that input (the default
    schedule folds a conv's epilogue into the tile write-back only then).

        >>> broadcast_indices((1, 4), (i, j), (1, 4))   # (i, j); without out_shape: (0, j)
    """
    lead = len(out_idx) - len(shape)
    outs = tuple(out_shape[lead:]) if out_shape is not None else (None,) * len(shape)
    return tuple(0 if size == 1 and o != 1 else i
                 for size, o, i in zip(shape, outs, out_idx[lead:]))


def ints(value, n: int, op: str, arg: str) -> tuple[int, ...]:
    """An int or a length-``n`` sequence of ints as a tuple of ``n`` ints."""
    vals = (value,) * n if not isinstance(value, (tuple, list)) else tuple(value)
    if len(vals) != n or not all(map(is_int_value, vals)):
        raise TEAttributeError(f"{op}: {arg}={value!r} must be an int or {n} ints")
    return tuple(v.__index__() for v in vals)


def pair(value, op: str, arg: str) -> tuple[int, int]:
    return ints(value, 2, op, arg)  # type: ignore[return-value]


def scaled(var, factor: int):
    """``var * factor`` without the ``* 1`` that would clutter the printed loop IR."""
    return var if factor == 1 else var * factor


def prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def clamp(index, size: int):
    """``index`` clamped into ``[0, size)``: keeps a guarded read provably in bounds."""
    return _e.max(_e.min(index, size - 1), 0)


def reduce_stage(shape, names, body, dtype: str, name: str) -> Tensor:
    """The reduction ``compute(shape, body)`` stored as ``dtype``: when it accumulates in a
    wider dtype (int8 -> int32), the stage is ``<name>_acc`` and a cast stage ``name`` follows."""
    acc_dtype = body(*(_e.Var(n) for n in names)).dtype
    acc = compute_named(shape, names, body, name if acc_dtype == dtype else f"{name}_acc")
    if acc.dtype == dtype:
        return acc
    return compute_named(shape, names, lambda *i: store(acc[i], dtype), name)
