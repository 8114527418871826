"""Legalizations of the data-movement ops: every output element is one input element (or a
padding value), found by index arithmetic. Loads that a ``select`` may discard are clamped
into bounds, because both branches of a select may be evaluated.
"""

from __future__ import annotations


from ..te.tensor import compute_named
from ..tir import expr as E
from .legalize import axis_names
from .registry import register_legalization
from .transform import slice_ranges


def _clamp(i, size: int):
    return E.max(E.min(i, size - 1), 0)


def _unflatten(flat, shape):
    """Indices of the element at row-major position ``flat`` in a tensor of ``shape``."""
    out = []
    for d in reversed(range(len(shape))):
        out.append(flat % shape[d] if d else flat)
        flat = flat // shape[d]
    return tuple(reversed(out))


def _copy_reshape(name):
    @register_legalization(name)
    def lower(ins, attrs, out_type):
        x = ins[0]

        def body(*idx):
            flat = None
            for i, s in zip(idx, out_type.shape):
                flat = i if flat is None else flat * s + i
            return x[_unflatten(flat, x.shape)]

        return compute_named(out_type.shape, axis_names(out_type.ndim), body, name)
    return lower


for _name in ("reshape", "flatten", "squeeze", "unsqueeze"):
    _copy_reshape(_name)


@register_legalization("transpose")
def _transpose(ins, attrs, out_type):
    x = ins[0]
    perm = attrs.get("perm") or tuple(reversed(range(x.ndim)))

    def body(*idx):
        src = [None] * x.ndim
        for out_axis, in_axis in enumerate(perm):
            src[in_axis] = idx[out_axis]
        return x[tuple(src)]

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "transpose")


@register_legalization("concat")
def _concat(ins, attrs, out_type):
    axis = attrs["axis"] % out_type.ndim
    offsets = [0]
    for t in ins:
        offsets.append(offsets[-1] + t.shape[axis])

    def body(*idx):
        value = None
        for t, off in reversed(list(zip(ins, offsets))):
            i = idx[axis] - off if off else idx[axis]
            src = idx[:axis] + (_clamp(i, t.shape[axis]),) + idx[axis + 1:]
            v = t[src]
            value = v if value is None else E.select(idx[axis] < off + t.shape[axis], v, value)
        return value

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "concat")


@register_legalization("split")
def _split(ins, attrs, out_type):
    x = ins[0]
    axis = attrs["axis"] % x.ndim
    outs, off = [], 0
    for k, t in enumerate(out_type.fields):
        def body(*idx, off=off):
            return x[idx[:axis] + (idx[axis] + off if off else idx[axis],) + idx[axis + 1:]]
        outs.append(compute_named(t.shape, axis_names(t.ndim), body, f"split_{k}"))
        off += t.shape[axis]
    return tuple(outs)


@register_legalization("slice")
def _slice(ins, attrs, out_type):
    x = ins[0]
    ranges = slice_ranges(x.shape, attrs["starts"], attrs["ends"], attrs.get("axes"),
                          attrs.get("steps"))

    def body(*idx):
        return x[tuple(i * st + s if (s, st) != (0, 1) else i
                       for i, (s, st, _) in zip(idx, ranges))]

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "slice")


@register_legalization("gather")
def _gather(ins, attrs, out_type):
    data, indices = ins
    axis = attrs["axis"] % data.ndim
    n = data.shape[axis]
    # dimensions of the indices in the output: 0 for a 0-d index, passed as a (1,) buffer
    k = out_type.ndim - data.ndim + 1

    def body(*idx):
        ix = indices[idx[axis:axis + k] if k else (0,)]
        ix = E.cast("int32", ix)
        # out of range is an error the compiled model checks before this kernel runs (see
        # mlcbook.graph.legalize.index_bounds); the kernel clamps so it never reads outside
        ix = _clamp(E.select(ix < 0, ix + n, ix), n)
        return data[idx[:axis] + (ix,) + idx[axis + k:]]

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "gather")


def _pad_index(i, size: int, mode: str):
    if mode == "edge":
        return _clamp(i, size)
    if mode == "wrap":
        return i % size
    # reflect (without repeating the edge): fold i into [0, 2*size - 2), then mirror
    if size == 1:
        return E.const(0)
    period = 2 * size - 2
    j = i % period
    return _clamp(E.select(j < size, j, period - j), size)  # the clamp states the bound


@register_legalization("pad")
def _pad(ins, attrs, out_type):
    x = ins[0]
    pads, mode = attrs["pads"], attrs["mode"]
    nd = x.ndim

    def body(*idx):
        src, cond = [], None
        for d in range(nd):
            i = idx[d] - pads[d] if pads[d] else idx[d]
            size = x.shape[d]
            if mode != "constant":
                src.append(_pad_index(i, size, mode) if pads[d] > 0 or pads[nd + d] > 0 else i)
                continue
            conds = ([i >= 0] if pads[d] > 0 else []) + ([i < size] if pads[nd + d] > 0 else [])
            for c in conds:
                cond = c if cond is None else cond & c
            src.append(_clamp(i, size) if conds else i)
        v = x[tuple(src)]
        if cond is None:
            return v
        value = attrs["value"]
        fill = E.const(bool(value) if x.dtype == "bool" else
                       (int(value) if E.is_int(x.dtype) else float(value)), x.dtype)
        return E.select(cond, v, fill)

    return compute_named(out_type.shape, axis_names(out_type.ndim), body, "pad")


