"""Converters of the ONNX ops that put each value at a computed place: ``CenterCropPad``,
``Col2Im``, ``MaxUnpool``, ``ReverseSequence`` and ``TensorScatter``. Each is a
composition of graph ops that already exist (a pad, a transposed convolution with a 0/1
kernel, a scatter, a gather, a where), so each compiles like any graph:

* ``CenterCropPad`` is one ``pad`` whose widths are negative where it crops;
* ``Col2Im`` is the transposed convolution whose kernel puts block position ``k`` of
  channel ``c`` (input row ``c * K + k``) at that position of output channel ``c``;
* ``MaxUnpool`` scatters the values to their flat indices in a zero tensor;
* ``ReverseSequence`` and ``TensorScatter`` gather along the time axis with indices
  computed from their (run-time) lengths or write positions.

    >>> sorted(CONVERTERS["Col2Im"].attrs)
    ['dilations', 'pads', 'strides']
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype


def _axes(attrs, count: int, ndim: int, op: str) -> tuple[int, ...]:
    axes = tuple(attrs.get("axes") or range(count))
    if len(axes) != count or not all(-ndim <= a < ndim for a in axes):
        raise Unsupported(f"{op}: axes={axes} must be {count} axes of a rank-{ndim} input")
    return tuple(a % ndim for a in axes)


@converter("CenterCropPad", attrs=("axes",), static=(1,))
@guard_dtype
def _center_crop_pad(cx, ins, attrs):
    x = ins[0]
    shape = cx.ints(1, "shape")
    axes = _axes(attrs, len(shape), x.type.ndim, "CenterCropPad")
    before, after = [0] * x.type.ndim, [0] * x.type.ndim
    for a, want in zip(axes, shape):
        # crop: the extra element (of an odd difference) is cut at the end; pad: added there
        change = want - x.shape[a]
        before[a] = change // 2 if change >= 0 else -(-change // 2)
        after[a] = change - before[a]
    if not any(before + after):
        return x
    return cx.call("pad", x, pads=tuple(before + after), value=0.0)


def _window(attrs, nsp: int):
    strides = tuple(attrs.get("strides") or (1,) * nsp)
    dilations = tuple(attrs.get("dilations") or (1,) * nsp)
    pads = tuple(attrs.get("pads") or (0,) * (2 * nsp))
    return strides, dilations, pads


@converter("Col2Im", attrs=("dilations", "pads", "strides"), static=(1, 2))
@guard_dtype
def _col2im(cx, ins, attrs):
    x = ins[0]
    image, block = cx.ints(1, "image_shape"), cx.ints(2, "block_shape")
    nsp, k = len(image), math.prod(block)
    strides, dilations, pads = _window(attrs, nsp)
    n, ck, length = x.shape
    # how many blocks fit along each spatial axis, and what is left over at the end
    span = [image[d] + pads[d] + pads[nsp + d] - dilations[d] * (block[d] - 1) - 1
            for d in range(nsp)]
    counts = tuple(s // st + 1 for s, st in zip(span, strides))
    if ck % k or math.prod(counts) != length or min(span) < 0:
        raise Unsupported(
            f"Col2Im: an input of shape {x.shape} does not hold {k}-element blocks "
            f"{block} of an image {image} (strides {strides}, pads {pads}, dilations "
            f"{dilations}): it needs C * {k} rows and {math.prod(counts)} columns")
    c = ck // k
    weight = np.zeros((ck, 1) + tuple(block), x.dtype)
    for row in range(ck):
        weight[(row, 0) + np.unravel_index(row % k, block)] = 1
    cols = cx.call("reshape", x, shape=(n, ck) + counts, suffix="_blocks")
    return cx.call("conv_transpose", cols, Constant(weight), strides=strides, pads=pads,
                   dilations=dilations, group=c,
                   output_padding=tuple(s % st for s, st in zip(span, strides)))


@converter("MaxUnpool", attrs=("kernel_shape", "pads", "strides"), static=(2,))
@guard_dtype
def _max_unpool(cx, ins, attrs):
    x, indices = ins[0], ins[1]
    nsp = x.type.ndim - 2
    kernel = tuple(attrs["kernel_shape"])
    strides, _, pads = _window(attrs, nsp)
    # the shape MaxPool's input had: the indices are flat positions in it
    unpooled = x.shape[:2] + tuple((x.shape[2 + d] - 1) * strides[d] - pads[d] - pads[nsp + d]
                                   + kernel[d] for d in range(nsp))
    zeros = Constant(np.zeros((math.prod(unpooled),), x.dtype))
    flat = cx.call("scatter_elements", zeros,
                   cx.call("reshape", indices, shape=(-1,), suffix="_flat_indices"),
                   cx.call("reshape", x, shape=(-1,), suffix="_flat_values"),
                   axis=0, suffix="_flat")
    y = cx.call("reshape", flat, shape=unpooled, suffix="" if len(ins) < 3 else "_unpooled")
    want = cx.ints(2, "output_shape")
    if want is None or tuple(want) == unpooled:
        return y
    extra = [w - u for w, u in zip(want, unpooled)]
    if len(want) != len(unpooled) or min(extra) < 0:
        raise Unsupported(f"MaxUnpool: output_shape={want} is smaller than the unpooled "
                          f"shape {unpooled}")
    return cx.call("pad", y, pads=(0,) * len(extra) + tuple(extra), value=0.0)


def _along(values: np.ndarray, axis: int, ndim: int) -> Constant:
    """``values`` as a rank-``ndim`` constant laid along ``axis`` (size 1 elsewhere)."""
    shape = [1] * ndim
    shape[axis] = values.size
    return Constant(values.reshape(shape))


def _gather_at(cx, x, positions, axis: int, shape):
    """``x`` gathered along ``axis`` at ``positions`` (broadcast to ``shape``)."""
    full = cx.call("expand", positions, shape=shape, suffix="_index")
    return cx.call("gather_elements", x, full, axis=axis, suffix="_gather")


@converter("ReverseSequence", attrs=("batch_axis", "time_axis"))
@guard_dtype
def _reverse_sequence(cx, ins, attrs):
    x, lens = ins
    ndim = x.type.ndim
    batch, time = attrs.get("batch_axis", 1), attrs.get("time_axis", 0)
    if {batch, time} != {0, 1}:
        raise Unsupported(f"ReverseSequence: batch_axis={batch} and time_axis={time} must be "
                          "0 and 1")
    lens = cx.call("reshape", cx.call("cast", lens, dtype="int64", suffix="_lens64"),
                   shape=tuple(x.shape[batch] if d == batch else 1 for d in range(ndim)),
                   suffix="_lens")
    t = _along(np.arange(x.shape[time], dtype=np.int64), time, ndim)
    # time t of a sequence of length L reads L - 1 - t while t < L, and itself after
    mirrored = cx.call("sub", cx.call("sub", lens, Constant(np.int64(1)), suffix="_last"), t,
                       suffix="_mirror")
    inside = cx.call("less", t, lens, suffix="_inside")
    return _gather_at(cx, x, cx.call("where", inside, mirrored, t, suffix="_source"), time,
                      x.shape)


def _check_tensor_scatter(attrs):
    mode = attrs.get("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    return [] if mode in ("linear", "circular") else [f"mode={mode!r} is not 'linear' or "
                                                      "'circular'"]


@converter("TensorScatter", attrs=("axis", "mode"), check=_check_tensor_scatter)
@guard_dtype
def _tensor_scatter(cx, ins, attrs):
    cache, update = ins[0], ins[1]
    starts = ins[2] if len(ins) > 2 else None
    ndim = cache.type.ndim
    axis = attrs.get("axis", -2) % ndim
    mode = attrs.get("mode", "linear")
    circular = (mode.decode() if isinstance(mode, bytes) else mode) == "circular"
    size, written = cache.shape[axis], update.shape[axis]
    if axis == 0 or any(cache.shape[d] != update.shape[d] for d in range(ndim) if d != axis) \
            or written > size:
        raise Unsupported(f"TensorScatter: the update {update.shape} must match the cache "
                          f"{cache.shape} but along axis {axis} (not the batch axis 0), where "
                          "it may be shorter")
    pos = _along(np.arange(size, dtype=np.int64), axis, ndim)
    if starts is None:
        offset = pos
    else:
        first = cx.call("reshape", cx.call("cast", starts, dtype="int64", suffix="_starts64"),
                        shape=(cache.shape[0],) + (1,) * (ndim - 1), suffix="_starts")
        offset = cx.call("sub", pos, first, suffix="_offset")
    if circular:
        offset = cx.call("mod", offset, Constant(np.int64(size)), suffix="_wrap")
    # cache position p takes update row p - start when that row exists
    inside = cx.call("logical_and",
                     cx.call("greater_equal", offset, Constant(np.int64(0)), suffix="_ge"),
                     cx.call("less", offset, Constant(np.int64(written)), suffix="_lt"),
                     suffix="_written")
    row = cx.call("clip", offset, min=0, max=written - 1, suffix="_row")
    gathered = _gather_at(cx, update, row, axis, cache.shape)
    return cx.call("where", inside, gathered, cache)


__all__ = ["CONVERTERS"]
