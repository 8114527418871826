"""Data movement: ``transpose``, ``reshape``, ``pad``.

    >>> transpose(x, (0, 2, 1)).shape         # x: (2, 3, 4)
    (2, 4, 3)
    >>> reshape(x, (6, -1)).shape
    (6, 4)
    >>> pad(x, ((0, 0), (1, 1), (2, 0))).shape
    (2, 5, 6)
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor
from ._util import axis_names, check_tensor, clamp, compute_named, prod, scaled


def transpose(x: Tensor, axes=None, name: str = "transpose") -> Tensor:
    """``numpy.transpose(x, axes)``: dimension ``d`` of the result is dimension ``axes[d]``
    of ``x``; ``axes=None`` reverses the dimensions."""
    check_tensor(x, "transpose", "x")
    perm = tuple(reversed(range(x.ndim))) if axes is None else tuple(axes)
    valid = all(isinstance(a, int) and not isinstance(a, bool) and -x.ndim <= a < x.ndim
                for a in perm) and sorted(a % x.ndim for a in perm) == list(range(x.ndim))
    if not valid:
        raise TEShapeError(f"transpose: axes {axes!r} is not a permutation of the "
                           f"{x.ndim} dimensions of {x.name!r} {x.shape}; give each of "
                           f"0..{x.ndim - 1} exactly once")
    perm = tuple(a % x.ndim for a in perm)
    out_shape = tuple(x.shape[a] for a in perm)

    def body(*idx):
        src = [None] * x.ndim
        for d, a in enumerate(perm):
            src[a] = idx[d]
        return x[tuple(src)]

    return compute_named(out_shape, axis_names(x.ndim), body, name)


def reshape(x: Tensor, newshape, name: str = "reshape") -> Tensor:
    """``numpy.reshape(x, newshape)`` in row-major order; one dimension may be ``-1``."""
    check_tensor(x, "reshape", "x")
    dims = (newshape,) if isinstance(newshape, int) else tuple(newshape)
    size = prod(x.shape)
    if any(not isinstance(d, int) or d == 0 or d < -1 for d in dims) or dims.count(-1) > 1:
        raise TEShapeError(f"reshape: new shape {newshape!r} must be positive ints with at "
                           "most one -1")
    if -1 in dims:
        known = prod(d for d in dims if d != -1)
        if size % known:
            raise TEShapeError(f"reshape: cannot reshape {x.name!r} of shape {x.shape} "
                               f"({size} elements) into {dims}: {size} is not divisible "
                               f"by {known}")
        dims = tuple(size // known if d == -1 else d for d in dims)
    if prod(dims) != size:
        raise TEShapeError(f"reshape: cannot reshape {x.name!r} of shape {x.shape} ({size} "
                           f"elements) into {dims} ({prod(dims)} elements); the sizes "
                           "must match")

    def body(*idx):
        # row-major linear position in the output, unravelled into the input's dimensions
        linear = None
        for d, i in enumerate(idx):
            term = scaled(i, prod(dims[d + 1:]))
            linear = term if linear is None else linear + term
        if linear is None:
            linear = _e.const(0, "int32")
        src = []
        for d, extent in enumerate(x.shape):
            stride = prod(x.shape[d + 1:])
            v = linear if stride == 1 else linear // stride
            # the first input dimension needs no modulo: linear < size
            src.append(0 if extent == 1 else (v % extent if d > 0 else v))
        return x[tuple(src)]

    return compute_named(dims, axis_names(len(dims)), body, name)


def pad(x: Tensor, pad_width, value=0, name: str = "pad") -> Tensor:
    """``numpy.pad(x, pad_width, constant_values=value)``: ``pad_width`` is an int (all
    sides), or one ``(before, after)`` pair per dimension."""
    check_tensor(x, "pad", "x")
    if isinstance(pad_width, int):
        widths = [(pad_width, pad_width)] * x.ndim
    else:
        widths = [tuple(p) if isinstance(p, (tuple, list)) else (p, p) for p in pad_width]
    if len(widths) != x.ndim or any(len(p) != 2 for p in widths):
        raise TEShapeError(f"pad: pad_width {pad_width!r} needs one (before, after) pair per "
                           f"dimension of {x.name!r}, which has {x.ndim}")
    if any(not isinstance(v, int) or v < 0 for p in widths for v in p):
        raise TEShapeError(f"pad: pad_width {pad_width!r} must hold non-negative ints")
    out_shape = tuple(s + b + a for s, (b, a) in zip(x.shape, widths))
    fill = _e.as_expr(value, x.dtype)

    def body(*idx):
        src, conds = [], []
        for i, size, (before, after) in zip(idx, x.shape, widths):
            if before == 0 and after == 0:
                src.append(i)
                continue
            # the index is clamped so that the read stays in bounds even where the select
            # picks the fill value: a select may evaluate both branches
            src.append(clamp(i - before if before else i, size))
            if before:
                conds.append(i >= before)
            if after:
                conds.append(i < before + size)
        if not conds:
            return x[tuple(src)]
        cond = conds[0]
        for c in conds[1:]:
            cond = cond & c
        return _e.select(cond, x[tuple(src)], fill)

    if fill.dtype != x.dtype:
        raise TEError(f"pad: the fill value {value!r} does not fit dtype {x.dtype} of {x.name!r}")
    return compute_named(out_shape, axis_names(x.ndim), body, name)
