"""Data movement: every output element is one input element (or a fill value), found by
index arithmetic. ``transpose``, ``reshape``, ``pad``, ``concat``, ``split``, ``slice``,
``gather``.

    >>> transpose(x, (0, 2, 1)).shape         # x: (2, 3, 4)
    (2, 4, 3)
    >>> reshape(x, (6, -1)).shape
    (6, 4)
    >>> pad(x, ((0, 0), (1, 1), (2, 0))).shape
    (2, 5, 6)

Loads that a ``select`` may discard are clamped into bounds, because both branches of a
select may be evaluated.
"""

from __future__ import annotations

from ...errors import MLCError, TEError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import (and_all, axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    clamp, compute_named, normalize_axis, prod, scaled)


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


PAD_MODES = ("constant", "reflect", "edge", "wrap")


def _pad_index(i, size: int, mode: str):
    if mode == "edge":
        return clamp(i, size)
    if mode == "wrap":
        return i % size
    # reflect (without repeating the edge): fold i into [0, 2*size - 2), then mirror
    if size == 1:
        return _e.const(0)
    period = 2 * size - 2
    j = i % period
    return clamp(_e.select(j < size, j, period - j), size)  # the clamp states the bound


def pad(x: Tensor, pad_width, value=0, mode: str = "constant", name: str = "pad") -> Tensor:
    """``numpy.pad(x, pad_width, mode, constant_values=value)``: ``pad_width`` is an int
    (all sides), or one ``(before, after)`` pair per dimension; a negative width crops
    (ONNX's Pad). ``mode`` is one of ``constant``, ``reflect``, ``edge``, ``wrap``."""
    check_tensor(x, "pad", "x")
    if isinstance(pad_width, int):
        widths = [(pad_width, pad_width)] * x.ndim
    else:
        widths = [tuple(p) if isinstance(p, (tuple, list)) else (p, p) for p in pad_width]
    if len(widths) != x.ndim or any(len(p) != 2 for p in widths):
        raise TEShapeError(f"pad: pad_width {pad_width!r} needs one (before, after) pair per "
                           f"dimension of {x.name!r}, which has {x.ndim}")
    if any(not isinstance(v, int) for p in widths for v in p):
        raise TEShapeError(f"pad: pad_width {pad_width!r} must hold ints")
    if mode not in PAD_MODES:
        raise TEError(f"pad: mode {mode!r} is not one of {PAD_MODES}")
    out_shape = tuple(s + b + a for s, (b, a) in zip(x.shape, widths))
    if min(out_shape, default=1) < 1:
        raise TEShapeError(f"pad: pad_width {pad_width!r} crops {x.name!r} {x.shape} to "
                           f"{out_shape}; every dimension must keep at least one element")
    fill = _e.const(bool(value) if x.dtype == "bool" else
                    (int(value) if _e.is_int(x.dtype) else float(value)), x.dtype)

    def body(*idx):
        src, conds = [], []
        for i, size, (before, after) in zip(idx, x.shape, widths):
            i = i - before if before else i
            if mode != "constant":
                src.append(_pad_index(i, size, mode) if before > 0 or after > 0 else i)
                continue
            guard = ([i >= 0] if before > 0 else []) + ([i < size] if after > 0 else [])
            conds += guard
            src.append(clamp(i, size) if guard else i)
        cond = and_all(conds)
        return x[tuple(src)] if cond is None else _e.select(cond, x[tuple(src)], fill)

    return compute_named(out_shape, axis_names(x.ndim), body, name)


def concat(tensors, axis: int = 0, name: str = "concat") -> Tensor:
    """``numpy.concatenate(tensors, axis)``: shapes agree except along ``axis``."""
    tensors = [check_tensor(t, "concat", f"tensors[{k}]") for k, t in enumerate(tensors)]
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, "concat")
    for t in tensors[1:]:
        if t.dtype != first.dtype or t.shape[:axis] + t.shape[axis + 1:] != \
                first.shape[:axis] + first.shape[axis + 1:]:
            raise TEShapeError(f"concat: {t.name!r} {t.shape} {t.dtype} does not fit "
                               f"{first.name!r} {first.shape} {first.dtype}; all must have one "
                               f"dtype and one shape except along axis {axis}")
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.shape[axis])
    out_shape = first.shape[:axis] + (offsets[-1],) + first.shape[axis + 1:]

    def body(*idx):
        value = None
        for t, off in reversed(list(zip(tensors, offsets))):
            i = idx[axis] - off if off else idx[axis]
            v = t[idx[:axis] + (clamp(i, t.shape[axis]),) + idx[axis + 1:]]
            value = v if value is None else _e.select(idx[axis] < off + t.shape[axis], v, value)
        return value

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def split(x: Tensor, sizes, axis: int = 0, name: str = "split") -> tuple[Tensor, ...]:
    """``x`` cut along ``axis`` into pieces of ``sizes`` (which add up to its size there);
    piece ``k`` is the stage ``<name>_<k>``."""
    check_tensor(x, "split", "x")
    axis = normalize_axis(axis, x.ndim, "split")
    if sum(sizes) != x.shape[axis] or min(sizes, default=0) < 1:
        raise TEShapeError(f"split: sizes {tuple(sizes)} must be positive and add up to "
                           f"{x.shape[axis]}, the size of axis {axis} of {x.name!r} {x.shape}")
    outs, off = [], 0
    for k, size in enumerate(sizes):
        def body(*idx, off=off):
            return x[idx[:axis] + (idx[axis] + off if off else idx[axis],) + idx[axis + 1:]]
        shape = x.shape[:axis] + (size,) + x.shape[axis + 1:]
        outs.append(compute_named(shape, axis_names(x.ndim), body, f"{name}_{k}"))
        off += size
    return tuple(outs)


def slice_ranges(shape, starts, ends, axes=None, steps=None,
                 error: type[MLCError] = TEShapeError) -> list[tuple[int, int, int]]:
    """(start, step, length) for every axis of ``shape`` sliced ONNX's way: negative bounds
    count from the end, out-of-range ones are clamped. Bad arguments raise ``error``.

        >>> slice_ranges((10, 4), starts=(-3,), ends=(100,))
        [(7, 1, 3), (0, 1, 4)]
    """
    starts, ends = tuple(starts), tuple(ends)
    axes = tuple(range(len(starts))) if axes is None else tuple(axes)
    steps = (1,) * len(starts) if steps is None else tuple(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise error(f"slice: starts, ends, axes and steps must have the same length; got "
                    f"{starts}, {ends}, {axes}, {steps}")
    out = [(0, 1, d) for d in shape]
    seen = set()
    for s, e, a, st in zip(starts, ends, axes, steps):
        if not -len(shape) <= a < len(shape) or a % len(shape) in seen:
            raise error(f"slice: axes={axes} must be distinct axes of a tensor of rank "
                        f"{len(shape)}")
        a %= len(shape)
        seen.add(a)
        d = shape[a]
        if st == 0:
            raise error("slice: a step of 0 is not allowed")
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), d), min(max(e, 0), d)
            n = max(0, -(-(e - s) // st))
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
            n = max(0, -(-(s - e) // -st))
        out[a] = (s, st, n)
    return out


def slice(x: Tensor, starts, ends, axes=None, steps=None,  # noqa: A001 - ONNX's Slice
          name: str = "slice") -> Tensor:
    """``x[starts:ends:steps]`` along ``axes`` (all leading axes by default), with ONNX's
    rules for negative and out-of-range bounds (:func:`slice_ranges`)."""
    check_tensor(x, "slice", "x")
    ranges = slice_ranges(x.shape, starts, ends, axes, steps)
    shape = tuple(n for _, _, n in ranges)
    if min(shape, default=1) < 1:
        raise TEShapeError(f"slice: the slice of {x.name!r} {x.shape} is empty ({shape})")

    def body(*idx):
        return x[tuple(i * st + s if (s, st) != (0, 1) else i
                       for i, (s, st, _) in zip(idx, ranges))]

    return compute_named(shape, axis_names(len(shape)), body, name)


def gather(data: Tensor, indices: Tensor, axis: int = 0, name: str = "gather") -> Tensor:
    """``numpy.take(data, indices, axis)``: slices of ``data`` along ``axis`` picked by the
    integer tensor ``indices`` (negative counts from the end)."""
    check_tensor(data, "gather", "data")
    check_tensor(indices, "gather", "indices")
    if not _e.is_int(indices.dtype):
        raise TEError(f"gather: indices {indices.name!r} are {indices.dtype}; give an int tensor")
    axis = normalize_axis(axis, data.ndim, "gather")
    n = data.shape[axis]
    shape = data.shape[:axis] + indices.shape + data.shape[axis + 1:]

    def body(*idx):
        ix = indices[idx[axis:axis + indices.ndim]]
        ix = _e.cast("int32", ix)
        # out of range reads the edge here, so the kernel never reads outside ``data``; a
        # compiled model checks the indices before (mlcbook.graph.legalize.index_bounds)
        ix = clamp(_e.select(ix < 0, ix + n, ix), n)
        return data[idx[:axis] + (ix,) + idx[axis + indices.ndim:]]

    return compute_named(shape, axis_names(len(shape)), body, name)


def expand(x: Tensor, shape, name: str = "expand") -> Tensor:
    """``x`` broadcast to ``numpy.broadcast_shapes(x.shape, shape)``: ONNX's Expand, where a
    1 in ``shape`` keeps x's dimension."""
    check_tensor(x, "expand", "x")
    out = broadcast_shapes("expand", x.shape, tuple(int(s) for s in shape))
    return compute_named(out, axis_names(len(out)),
                         lambda *i: x[broadcast_indices(x.shape, i)], name)


def tile(x: Tensor, repeats, name: str = "tile") -> Tensor:
    """``numpy.tile(x, repeats)`` with one repeat count per dimension of x."""
    check_tensor(x, "tile", "x")
    repeats = tuple(int(r) for r in repeats)
    if len(repeats) != x.ndim or any(r < 1 for r in repeats):
        raise TEShapeError(f"tile: repeats={repeats} must give a positive count for each of "
                           f"the {x.ndim} dimensions of {x.name!r}")
    out = tuple(s * r for s, r in zip(x.shape, repeats))
    return compute_named(out, axis_names(len(out)),
                         lambda *i: x[tuple(v % s if r > 1 else v
                                            for v, s, r in zip(i, x.shape, repeats))], name)


def trilu(x: Tensor, upper: bool = True, k: int = 0, name: str = "trilu") -> Tensor:
    """``numpy.triu(x, k)`` (``upper``) or ``numpy.tril(x, k)`` over the last two axes."""
    check_tensor(x, "trilu", "x")
    if x.ndim < 2:
        raise TEShapeError(f"trilu: {x.name!r} has rank {x.ndim}; it needs at least 2")
    # c - r lies in [1 - rows, cols - 1]: a k beyond [-rows, cols] keeps all or nothing, as
    # the clamped k does, and the clamped k fits the loop's index type
    k = max(-int(x.shape[-2]), min(int(x.shape[-1]), int(k)))

    def body(*i):
        r, c = i[-2], i[-1]
        keep = c - r >= k if upper else c - r <= k
        return _e.select(keep, x[i], _e.const(0, x.dtype) if x.dtype != "bool"
                         else _e.const(False, "bool"))

    return compute_named(x.shape, axis_names(x.ndim), body, name)
