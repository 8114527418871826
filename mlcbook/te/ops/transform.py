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

from ...errors import MLCError, TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import (and_all, axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    clamp, compute_named, is_int_value, need_rank, normalize_axis, prod, scaled)


def transpose(x: Tensor, axes=None, name: str = "transpose") -> Tensor:
    """``numpy.transpose(x, axes)``: dimension ``d`` of the result is dimension ``axes[d]``
    of ``x``; ``axes=None`` reverses the dimensions."""
    check_tensor(x, "transpose", "x")
    perm = permutation(axes, x.shape)
    out_shape = tuple(x.shape[a] for a in perm)

    def body(*idx):
        src = [None] * x.ndim
        for d, a in enumerate(perm):
            src[a] = idx[d]
        return x[tuple(src)]

    return compute_named(out_shape, axis_names(x.ndim), body, name)


def permutation(axes, shape) -> tuple[int, ...]:
    """``axes``, a permutation of the dimensions of a tensor of ``shape`` (negative ones
    count from the end; None reverses them), as non-negative ints: transpose's check, which
    the graph op shares.

        >>> permutation((0, -1, 1), (2, 3, 4))
        (0, 2, 1)
    """
    n = len(shape)
    perm = tuple(reversed(range(n))) if axes is None else tuple(axes)
    if not (all(is_int_value(a) and -n <= a < n for a in perm)
            and sorted(a % n for a in perm) == list(range(n))):
        raise TEAttributeError(f"transpose: {axes!r} is not a permutation of the {n} "
                               f"dimensions of the data {tuple(shape)}; Instead: give each of "
                               f"0..{n - 1} exactly once")
    return tuple(a.__index__() % n for a in perm)


def reshaped(shape, newshape) -> tuple[int, ...]:
    """The shape ``newshape`` (an int or ints; one may be -1, inferred from the element
    count) of the elements of a tensor of ``shape``: reshape's check, which the graph op
    shares after resolving ONNX's 0s.

        >>> reshaped((3, 5), (-1, 3))
        (5, 3)
    """
    dims = (newshape,) if is_int_value(newshape) else tuple(newshape)
    size = prod(shape)
    if any(not is_int_value(d) or d < -1 for d in dims) or dims.count(-1) > 1:
        raise TEAttributeError(f"reshape: the new shape {newshape!r} must be ints >= 0 with at "
                               "most one -1 (the size left over)")
    dims = tuple(d.__index__() for d in dims)
    if -1 in dims:
        known = prod(d for d in dims if d != -1)
        if known == 0 or size % known:
            why = "the other sizes multiply to 0, so any size would do" if known == 0 else \
                f"its {size} elements are not a multiple of {known}, the other sizes' product"
            raise TEShapeError(f"reshape: cannot infer the -1 in {dims} for the data of shape "
                               f"{tuple(shape)}: {why}; Instead: give that size")
        dims = tuple(size // known if d == -1 else d for d in dims)
    if prod(dims) != size:
        raise TEShapeError(f"reshape: cannot reshape the data of shape {tuple(shape)} ({size} "
                           f"elements) into {dims} ({prod(dims)} elements); the sizes must "
                           "match")
    return dims


def reshape(x: Tensor, newshape, name: str = "reshape") -> Tensor:
    """``numpy.reshape(x, newshape)`` in row-major order; one dimension may be ``-1``."""
    check_tensor(x, "reshape", "x")
    dims = reshaped(x.shape, newshape)

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


def padded_shape(shape, widths, mode: str, least: int = 1) -> tuple[int, ...]:
    """The shape of a tensor of ``shape`` padded by ``widths``, one ``(before, after)`` pair
    per dimension (negative crops), in ``mode``: pad's check, which the graph op shares (with
    ``least=0``: it may crop a dimension to nothing)."""
    if len(widths) != len(shape) or any(len(p) != 2 for p in widths):
        raise TEAttributeError(f"pad: the widths {widths!r} need one (before, after) pair per "
                               f"dimension of the data, which has {len(shape)}")
    if not all(is_int_value(v) for p in widths for v in p):
        raise TEAttributeError(f"pad: the widths {widths!r} must be ints")
    if mode not in PAD_MODES:
        raise TEAttributeError(f"pad: mode {mode!r} is not one of {PAD_MODES}")
    out = tuple(s + b + a for s, (b, a) in zip(shape, widths))
    if min(out, default=least) < least:
        keep = "keep at least one element of" if least else "crop at most the length of"
        raise TEShapeError(f"pad: the widths {tuple(map(tuple, widths))} crop the data "
                           f"{tuple(shape)} to {out}; Instead: {keep} every dimension")
    return out


def pad(x: Tensor, pad_width, value=0, mode: str = "constant", name: str = "pad") -> Tensor:
    """``numpy.pad(x, pad_width, mode, constant_values=value)``: ``pad_width`` is an int
    (all sides), or one ``(before, after)`` pair per dimension; a negative width crops
    (ONNX's Pad). ``mode`` is one of ``constant``, ``reflect``, ``edge``, ``wrap``."""
    check_tensor(x, "pad", "x")
    if isinstance(pad_width, int):
        widths = [(pad_width, pad_width)] * x.ndim
    else:
        widths = [tuple(p) if isinstance(p, (tuple, list)) else (p, p) for p in pad_width]
    out_shape = padded_shape(x.shape, widths, mode, least=1)
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


def joined_shape(shapes, axis: int) -> tuple[int, ...]:
    """The shape of tensors of ``shapes`` concatenated along ``axis`` (non-negative): concat's
    check, which the graph op shares."""
    first = tuple(shapes[0])
    for k, s in enumerate(shapes[1:], 1):
        if len(s) != len(first) or any(a != b for d, (a, b) in enumerate(zip(s, first))
                                       if d != axis):
            raise TEShapeError(f"concat: input {k} {tuple(s)} does not fit input 0 {first}; "
                               f"Instead: give inputs of one shape except along axis {axis}")
    return first[:axis] + (sum(s[axis] for s in shapes),) + first[axis + 1:]


def concat(tensors, axis: int = 0, name: str = "concat") -> Tensor:
    """``numpy.concatenate(tensors, axis)``: shapes agree except along ``axis``."""
    tensors = [check_tensor(t, "concat", f"tensors[{k}]") for k, t in enumerate(tensors)]
    first = tensors[0]
    axis = normalize_axis(axis, first.ndim, "concat")
    for k, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype:
            raise TEDTypeError(f"concat: input {k} is {t.dtype} but input 0 is {first.dtype}; "
                               "Instead: cast them to one dtype")
    out_shape = joined_shape([t.shape for t in tensors], axis)
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.shape[axis])

    def body(*idx):
        value = None
        for t, off in reversed(list(zip(tensors, offsets))):
            i = idx[axis] - off if off else idx[axis]
            v = t[idx[:axis] + (clamp(i, t.shape[axis]),) + idx[axis + 1:]]
            value = v if value is None else _e.select(idx[axis] < off + t.shape[axis], v, value)
        return value

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def check_split(shape, sizes, axis: int, least: int = 1) -> None:
    """Raise unless ``sizes``, each at least ``least``, add up to ``shape[axis]``: split's
    check, which the graph op shares (with ``least=0``: a piece may be empty)."""
    if not all(is_int_value(s) for s in sizes):
        raise TEAttributeError(f"split: sizes {tuple(sizes)} must be ints")
    if sum(sizes) != shape[axis] or min(sizes, default=least) < least:
        word = "positive" if least else "non-negative"
        raise TEShapeError(f"split: sizes {tuple(sizes)} must be {word} and add up to "
                           f"{shape[axis]}, the size of axis {axis} of the data {tuple(shape)}")


def split(x: Tensor, sizes, axis: int = 0, name: str = "split") -> tuple[Tensor, ...]:
    """``x`` cut along ``axis`` into pieces of ``sizes`` (which add up to its size there);
    piece ``k`` is the stage ``<name>_<k>``."""
    check_tensor(x, "split", "x")
    axis = normalize_axis(axis, x.ndim, "split")
    check_split(x.shape, sizes, axis, least=1)
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
        raise TEDTypeError(f"gather: the indices are {indices.dtype}; Instead: give an int "
                           "tensor")
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


def tiled_shape(shape, repeats) -> tuple[int, ...]:
    """The shape of a tensor of ``shape`` tiled ``repeats`` times, one count per dimension:
    tile's check, which the graph op shares."""
    if (isinstance(repeats, (str, bytes)) or not hasattr(repeats, "__len__")
            or len(repeats) != len(shape) or not all(is_int_value(r) and r >= 1 for r in repeats)):
        raise TEAttributeError(f"tile: repeats={repeats!r} must give a positive count for each "
                               f"of the {len(shape)} dimensions of the data {tuple(shape)} (a 0 "
                               "would make an empty tensor, which mlcbook does not compute)")
    return tuple(s * r.__index__() for s, r in zip(shape, repeats))


def tile(x: Tensor, repeats, name: str = "tile") -> Tensor:
    """``numpy.tile(x, repeats)`` with one repeat count per dimension of x."""
    check_tensor(x, "tile", "x")
    out = tiled_shape(x.shape, repeats)
    repeats = tuple(o // s for o, s in zip(out, x.shape))
    return compute_named(out, axis_names(len(out)),
                         lambda *i: x[tuple(v % s if r > 1 else v
                                            for v, s, r in zip(i, x.shape, repeats))], name)


def trilu(x: Tensor, upper: bool = True, k: int = 0, name: str = "trilu") -> Tensor:
    """``numpy.triu(x, k)`` (``upper``) or ``numpy.tril(x, k)`` over the last two axes."""
    check_tensor(x, "trilu", "x")
    need_rank("trilu", x.shape, 2, "the data", "(..., rows, columns)")
    # c - r lies in [1 - rows, cols - 1]: a k beyond [-rows, cols] keeps all or nothing, as
    # the clamped k does, and the clamped k fits the loop's index type
    k = max(-int(x.shape[-2]), min(int(x.shape[-1]), int(k)))

    def body(*i):
        r, c = i[-2], i[-1]
        keep = c - r >= k if upper else c - r <= k
        return _e.select(keep, x[i], _e.const(0, x.dtype) if x.dtype != "bool"
                         else _e.const(False, "bool"))

    return compute_named(x.shape, axis_names(x.ndim), body, name)
