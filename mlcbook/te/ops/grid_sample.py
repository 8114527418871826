"""ONNX's ``GridSample`` (PyTorch's ``grid_sample``), ``AffineGrid`` (``affine_grid``) and
``DeformConv`` (torchvision's ``deform_conv2d``), whose kernel taps are sampled so.

    >>> y = grid_sample(x, grid, mode="linear", padding_mode="zeros")  # x (N, C, H, W)
    >>> g = affine_grid(theta, (2, 3, 4, 5))                           # theta (N, 2, 3)
    >>> z = deform_conv(x, w, offset)                     # offset (N, 2*kH*kW, oH, oW)

``grid[n, *o]`` holds, for each output point, a position in ``x`` normalized to [-1, 1],
last axis first (x, y[, z]). :func:`source_coordinate` turns it into a coordinate of an
axis and moves it inside the borders by the padding mode; :func:`taps` lists the
elements mixed around it with their weights (1 nearest, 2 linear, 4 cubic per axis). The
helpers are written once for loop-IR expressions and the gradient rule's graph expressions
alike: ``m`` is :data:`.resize.IR_MATH` or its equivalent there. :func:`mix` sums the taps'
reads in a compute (grid_sample's, and deform_conv's linear taps with zeros outside).
"""

from __future__ import annotations

import itertools

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from ...tir.stmt import KEEP_MATERIALIZED
from ..tensor import Tensor
from .nn import conv, window_attrs, window_out_size
from .resize import IR_MATH, axis_taps
from .util import and_all, axis_names, check_tensor, clamp, compute_dtype, compute_named, store

MODES = ("linear", "nearest", "cubic")
PADDING_MODES = ("zeros", "border", "reflection")


def check_grid_sample(x_shape, grid_shape, mode: str, padding_mode: str):
    """Raise naming what is wrong with these grid_sample arguments: grid_sample's check."""
    if mode not in MODES:
        raise TEAttributeError(f"grid_sample: mode={mode!r} is not one of {', '.join(MODES)}")
    if padding_mode not in PADDING_MODES:
        raise TEAttributeError(f"grid_sample: padding_mode={padding_mode!r} is not one of "
                               f"{', '.join(PADDING_MODES)}")
    r = len(x_shape) - 2
    if r < 1 or len(grid_shape) != r + 2 or grid_shape[0] != x_shape[0] or grid_shape[-1] != r:
        raise TEShapeError(f"grid_sample: x {tuple(x_shape)} and grid {tuple(grid_shape)} do "
                           f"not fit; x is (N, C, *spatial) and grid (N, *out_spatial, "
                           f"{max(r, 1)}) with the same N and one coordinate per spatial axis")
    if mode == "cubic" and r != 2:
        raise TEShapeError(f"grid_sample: cubic mode samples 2-D images; x {tuple(x_shape)} has "
                           f"{r} spatial axes. Instead: use mode='linear'")


def _reflect(v, lo: float, hi: float, m):
    """``v`` mirrored at the borders ``lo`` and ``hi`` until it lies between them: a triangle
    wave of period ``2 (hi - lo)``, which reads ``v`` once (the expression stays small)."""
    span = hi - lo
    if span == 0:
        return v * 0.0 + lo
    u = v - lo
    w = u - (2.0 * span) * m.floor(u * (0.5 / span))
    return lo + span - m.abs(w - span)


def _borders(size: int, align_corners: bool) -> tuple[float, float]:
    return (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)


def source_coordinate(g, size: int, mode: str, padding_mode: str, align_corners: bool, m):
    """The coordinate on an axis of ``size`` of the normalized position ``g``: rounded for
    nearest mode, clamped (border) or mirrored (reflection) into the axis. Cubic mode pads
    its taps instead, as PyTorch and onnxruntime do."""
    c = (g + 1.0) * 0.5 * (size - 1) if align_corners else ((g + 1.0) * size - 1.0) * 0.5
    if mode == "nearest":
        c = m.rint(c)
    if mode == "cubic":
        return c
    if padding_mode == "border":
        c = m.minimum(m.maximum(c, 0.0), size - 1.0)
    elif padding_mode == "reflection":
        c = _reflect(c, *_borders(size, align_corners), m)
    return c


def taps(c, mode: str, m):
    """[(position, weight)] of the elements mixed at coordinate ``c`` (positions are floats
    holding integers; the weight of nearest's one tap is None): Resize's linear and cubic
    taps (:func:`.resize.axis_taps`, cubic with a = -0.75)."""
    if mode == "nearest":
        return [(c, None)]
    return axis_taps(c, 0, mode, -0.75, False, m)


def tap_index(p, size: int, padding_mode: str, align_corners: bool, m):
    """(index, inside) of tap position ``p``: zeros padding reads 0 outside the axis (inside
    is None for the other modes, which move the position into it)."""
    if padding_mode == "zeros":
        return m.trunc(p), (p >= 0.0) & (p < float(size))
    if padding_mode == "border":
        return m.trunc(m.minimum(m.maximum(p, 0.0), size - 1.0)), None
    return m.trunc(_reflect(p, *_borders(size, align_corners), m)), None


def grid_sample(x: Tensor, grid: Tensor, mode: str = "linear", padding_mode: str = "zeros",
                align_corners: bool = False, name: str = "grid_sample") -> Tensor:
    """``y[n, c, *o]``: ``x[n, c]`` sampled at ``grid[n, *o]`` (see the module)."""
    check_tensor(x, "grid_sample", "x")
    check_tensor(grid, "grid_sample", "grid")
    check_grid_sample(x.shape, grid.shape, mode, padding_mode)
    if not (_e.is_float(x.dtype) and _e.is_float(grid.dtype)):
        raise TEDTypeError(f"grid_sample: x is {x.dtype} and grid {grid.dtype}; both must be "
                           "float")
    r = x.ndim - 2
    sizes = x.shape[2:]
    dt = compute_dtype(grid.dtype)
    out_shape = x.shape[:2] + grid.shape[1:-1]
    points = grid.shape[:-1]

    def coordinate(a):
        return lambda n, *o: source_coordinate(_e.cast(dt, grid[(n,) + o + (r - 1 - a,)]),
                                               sizes[a], mode, padding_mode, align_corners,
                                               IR_MATH)

    # each point's coordinates and tap weights, once: every channel and every tap reads them
    # (the loop IR shares no subexpressions; inlined, they were most of a cubic kernel's code)
    coords = [compute_named(points, axis_names(len(points)), coordinate(a), f"{name}_coord{a}",
                            attrs={KEEP_MATERIALIZED: True}) for a in range(r)]
    weights = None if mode == "nearest" else [_tap_weights(c, mode) for c in coords]

    def body(n, ch, *o):
        per_axis = []
        for a in range(r):
            c = coords[a][(n,) + o]
            per_axis.append([(tap_index(p, sizes[a], padding_mode, align_corners, IR_MATH),
                              w if weights is None else weights[a][(n,) + o + (k,)])
                             for k, (p, w) in enumerate(taps(c, mode, IR_MATH))])
        return store(mix(x, (n, ch), per_axis, dt), x.dtype)

    return compute_named(out_shape, axis_names(len(out_shape)), body, name)


def mix(x: Tensor, lead: tuple, per_axis, dt: str):
    """The sum of ``x[lead + taps]`` over every combination of the taps of its trailing
    axes, each weighted by the product of its weights: ``per_axis[a]`` lists axis ``a``'s
    taps as ``((index, inside), weight)`` (:func:`tap_index`; a tap not inside reads 0, a
    weight None is 1). Indices are clamped, so the reads stay in ``x``."""
    sizes = x.shape[len(lead):]
    total = None
    for combo in itertools.product(*per_axis):
        idx = tuple(clamp(i, s) for ((i, _), _), s in zip(combo, sizes))
        v = _e.cast(dt, x[tuple(lead) + idx])
        inside = and_all(ok for (_, ok), _ in combo if ok is not None)
        if inside is not None:
            v = _e.select(inside, v, _e.const(0.0, dt))
        for _, w in combo:
            v = v if w is None else v * w
        total = v if total is None else total + v
    return total


#: taps per axis of the modes that weigh them
TAPS = {"linear": 2, "cubic": 4}


def _tap_weights(coord: Tensor, mode: str) -> Tensor:
    """``w[*point, k]``: the weight of tap ``k`` at each point of an axis's coordinates, once
    per point (a cubic weight is a polynomial of the coordinate's fraction)."""
    shape = coord.shape + (TAPS[mode],)

    def body(*i):
        ws = [w for _, w in taps(coord[i[:-1]], mode, IR_MATH)]
        out = ws[-1]
        for k in range(len(ws) - 2, -1, -1):
            out = _e.select(i[-1] == k, ws[k], out)
        return out

    return compute_named(shape, axis_names(len(shape)), body, f"{coord.name}_weight",
                         attrs={KEEP_MATERIALIZED: True})


def base_grid(size: int, align_corners: bool, i):
    """The normalized position of element ``i`` of an axis of ``size`` (``i`` an array or an
    expression of a float dtype)."""
    if align_corners:
        return i * (2.0 / (size - 1)) - 1.0 if size > 1 else i * 0.0 - 1.0
    return (i * 2.0 + 1.0) / size - 1.0


def affine_grid(theta: Tensor, size, align_corners: bool = False,
                name: str = "affine_grid") -> Tensor:
    """``grid[n, *o, k] = theta[n, k] . (positions of o, last axis first, 1)`` for an output
    of ``size`` (N, C, *spatial): the sampling grid of an affine transform."""
    check_tensor(theta, "affine_grid", "theta")
    size = tuple(int(s) for s in size)
    r = len(size) - 2
    if r not in (2, 3) or theta.shape != (size[0], r, r + 1) or not _e.is_float(theta.dtype):
        raise TEShapeError(f"affine_grid: theta {theta.shape} {theta.dtype} and size {size} "
                           "do not fit; theta is a float (N, 2, 3) with size (N, C, H, W) or "
                           "(N, 3, 4) with size (N, C, D, H, W)")
    dt = compute_dtype(theta.dtype)
    spatial = size[2:]

    def body(n, *rest):
        o, k = rest[:-1], rest[-1]
        # column a of theta multiplies the position along spatial axis r - 1 - a
        total = _e.cast(dt, theta[n, k, r])
        for a in range(r):
            axis = r - 1 - a
            pos = base_grid(spatial[axis], align_corners, _e.cast(dt, o[axis]))
            total = total + _e.cast(dt, theta[n, k, a]) * pos
        return store(total, theta.dtype)

    shape = (size[0],) + spatial + (r,)
    return compute_named(shape, axis_names(len(shape)), body, name)


def deform_conv(x: Tensor, w: Tensor, offset: Tensor, *optional: Tensor, masked: int = 0,
                dilations=None, group: int = 1, kernel_shape=None, offset_group: int = 1,
                pads=None, strides=None, name: str = "deform_conv") -> Tensor:
    """ONNX's DeformConv (2-D): a convolution whose kernel taps are moved by ``offset``
    ``(N, offset_group*kH*kW*2, oH, oW)`` (a (dy, dx) per tap, output point and group of
    ``C / offset_group`` channels), read bilinearly (0 outside ``x``) and weighed by
    ``mask`` ``(N, offset_group*kH*kW, oH, oW)``. ``optional`` is the bias ``(F,)``, the
    mask (``masked=1``), or both in that order. Stages: ``<name>_cols[n, c, oh*kH + i,
    ow*kW + j]``, the tap ``(i, j)`` of output point ``(oh, ow)`` sampled, and the
    convolution of it with strides of the kernel (:func:`.nn.conv`).

    >>> deform_conv(x, w, offset).shape     # x (1, 2, 5, 5), w (4, 2, 3, 3), offset (1, 18, 3, 3)
    (1, 4, 3, 3)
    """
    op = "deform_conv"
    if masked not in (0, 1) or len(optional) > 1 + masked:
        raise TEShapeError(f"{op}: {3 + len(optional)} inputs with masked={masked!r}. "
                           "Instead: give x, w, offset, then the bias and/or the mask, with "
                           "masked=1 where the last one is the mask")
    bias = optional[0] if len(optional) > masked else None
    mask = optional[-1] if masked else None
    for t, arg in ((x, "x"), (w, "w"), (offset, "offset"), (bias, "bias"), (mask, "mask")):
        if t is not None:
            check_tensor(t, op, arg)
    if bias is not None and bias.shape != w.shape[:1]:
        raise TEShapeError(f"{op}: the bias has shape {bias.shape}; it must be {w.shape[:1]}, "
                           "one per output channel. Instead: give that (or masked=1 where "
                           "the input is the mask)")
    if x.ndim != 4 or w.ndim != 4:
        raise TEShapeError(f"{op}: x {x.shape} and w {w.shape} must be 4-D, (N, C, H, W) and "
                           "(F, C/group, kH, kW). Instead: give 2-D images (mlcbook's "
                           "DeformConv is 2-D)")
    for a, v in (("group", group), ("offset_group", offset_group)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 or x.shape[1] % v:
            raise TEAttributeError(f"{op}: {a}={v!r} must be a positive int dividing the "
                                   f"{x.shape[1]} input channels. Instead: give a divisor")
    if not all(_e.is_float(t.dtype) and t.dtype == x.dtype for t in (w, offset) + optional):
        raise TEDTypeError(f"{op}: the inputs are {[t.dtype for t in (x, w, offset) + optional]}"
                           "; Instead: give them all one float dtype")
    if kernel_shape is not None and tuple(kernel_shape) != w.shape[2:]:
        raise TEShapeError(f"{op}: kernel_shape={tuple(kernel_shape)} disagrees with the "
                           f"weight's {w.shape[2:]}. Instead: leave kernel_shape out")
    kernel, strides, pads, dil = window_attrs(op, 2, w.shape[2:], strides, pads, dilations)
    out = tuple(window_out_size(op, x.shape[2 + a], pads[a], pads[2 + a], kernel[a], strides[a],
                                dil[a]) for a in range(2))
    (kh, kw), (oh_n, ow_n), taps_n = kernel, out, kernel[0] * kernel[1]
    n_img, c_n = x.shape[:2]
    for t, arg, per in ((offset, "offset", 2 * taps_n), (mask, "mask", taps_n)):
        if t is not None and t.shape != (n_img, offset_group * per, oh_n, ow_n):
            raise TEShapeError(
                f"{op}: the {arg} has shape {t.shape}; with offset_group={offset_group}, "
                f"kernel {kernel} and output {out} it must be "
                f"{(n_img, offset_group * per, oh_n, ow_n)}. Instead: give that shape")
    dt = compute_dtype(x.dtype)
    per_group = c_n // offset_group

    def body(n, c, p, q):
        oh, i, ow, j = p // kh, p % kh, q // kw, q % kw
        tap = (c // per_group) * taps_n + i * kw + j
        per_axis = []
        for a, (o, k) in enumerate(((oh, i), (ow, j))):
            base = _e.cast(dt, o * strides[a] + k * dil[a] - pads[a])
            c_a = base + _e.cast(dt, offset[n, tap * 2 + a, oh, ow])
            per_axis.append([(tap_index(t, x.shape[2 + a], "zeros", False, IR_MATH), wt)
                             for t, wt in taps(c_a, "linear", IR_MATH)])
        v = mix(x, (n, c), per_axis, dt)
        return store(v if mask is None else v * _e.cast(dt, mask[n, tap, oh, ow]), x.dtype)

    cols = compute_named((n_img, c_n, oh_n * kh, ow_n * kw), ["n", "c", "p", "q"], body,
                         f"{name}_cols")
    return conv(cols, w, bias, strides=kernel, group=group, name=name)
