"""``resize``: ONNX's Resize (and Upsample) in nearest, linear and cubic modes.

    >>> y = resize(x, sizes=(1, 3, 8, 8), scales=(1, 1, 2, 2), mode="linear")

Each output coordinate ``o`` of an axis maps to a source coordinate ``c`` by the
``coordinate_transformation_mode`` (:func:`source_coordinate`, written once for numpy arrays
and loop-IR expressions alike; ``tf_crop_and_resize`` maps into the region ``roi``).
``nearest`` reads the source element ``c`` rounds to (``nearest_mode``); ``linear`` and
``cubic`` mix the 2 or 4 elements around ``c`` on every resized axis (:func:`axis_taps`;
more with ``antialias`` when downsampling).
Source indices past an edge read the edge (cubic's ``exclude_outside`` drops them instead);
with ``tf_crop_and_resize`` a point outside the input is ``extrapolation_value``.
Coordinates are computed in float64, as onnx's reference does, so that ties round the same
way.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from ...errors import TEAttributeError, TEDTypeError, TEError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import axis_names, check_tensor, clamp, compute_named, const_like, store

MODES = ("nearest", "linear", "cubic")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric", "tf_crop_and_resize")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinate(o, mode: str, scale: float, in_len: int, out_len: int,
                      roi: tuple[float, float] = (0.0, 1.0)):
    """The source coordinate of output coordinate ``o`` (a float numpy array or a float64
    expression) on an axis of ``in_len`` resized to ``out_len`` by ``scale``; ``roi`` is the
    axis's (start, end) for tf_crop_and_resize. As in onnx's reference, align_corners,
    pytorch_half_pixel and tf_crop_and_resize divide by the unrounded output length
    ``scale * in_len``."""
    out_exact = scale * in_len
    if mode == "tf_crop_and_resize":
        start, end = roi
        if out_exact == 1:
            return o * 0.0 + (end - start) * (in_len - 1) / 2 + start * (in_len - 1)
        return o * ((end - start) * (in_len - 1) / (out_exact - 1)) + start * (in_len - 1)
    if mode == "half_pixel":
        return (o + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjust = out_len / (scale * in_len)
        return in_len / 2 * (1 - adjust) + (o + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (o + 0.5) / scale - 0.5 if out_exact != 1 else o * 0.0 - 0.5
    if mode == "align_corners":
        return o * (in_len - 1) / (out_exact - 1) if out_exact != 1 else o * 0.0
    if mode == "asymmetric":
        return o / scale
    raise TEError(f"resize: coordinate_transformation_mode={mode!r} is not one of "
                  f"{COORDINATE_MODES}")


def nearest_index(c, mode: str, floor, ceil):
    """The source index ``c`` rounds to: ``floor``/``ceil`` are numpy's or the IR's."""
    if mode == "round_prefer_floor":
        return ceil(c - 0.5)
    if mode == "round_prefer_ceil":
        return floor(c + 0.5)
    if mode == "floor":
        return floor(c)
    if mode == "ceil":
        return ceil(c)
    raise TEError(f"resize: nearest_mode={mode!r} is not one of {NEAREST_MODES}")


def _near(s, a: float):
    """Keys' cubic kernel for a distance ``s`` in [0, 1]."""
    return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0


def _far(s, a: float):
    """Keys' cubic kernel for a distance ``s`` in [1, 2]."""
    return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a


def cubic_weights(t, a: float = -0.75) -> list:
    """The weights of the four elements at offsets -1, 0, 1, 2 from ``floor(c)`` for the
    fraction ``t = c - floor(c)`` (Keys' cubic convolution with parameter ``a``; ``t`` an
    array or an expression)."""
    return [_far(t + 1.0, a), _near(t, a), _near(1.0 - t, a), _far(2.0 - t, a)]


#: the functions the coordinate helpers need, on loop-IR expressions (numpy's for arrays)
IR_MATH = SimpleNamespace(floor=_e.floor, rint=_e.round, abs=_e.abs, minimum=_e.min,
                          maximum=_e.max, where=_e.select, trunc=lambda v: _e.cast("int32", v))


def _keys(s, a: float, m):
    """Keys' cubic convolution kernel at the distance ``s`` (0 from 2 on)."""
    s = m.abs(s)
    return m.where(s <= 1.0, _near(s, a), m.where(s < 2.0, _far(s, a), s * 0.0))


def axis_taps(c, in_len: int, mode: str, cubic_coeff_a: float, exclude_outside: bool, m,
              antialias_scale: float = 1.0) -> list:
    """[(position, weight)] of the elements linear or cubic mode mixes at coordinate ``c`` on
    an axis of ``in_len`` (positions are floats holding integers; the caller clamps them into
    the axis). ``exclude_outside`` gives the positions outside the axis weight 0 and
    renormalizes the rest. ``antialias_scale`` < 1 (antialiased downsampling) stretches the
    kernel by 1 / scale over more taps, normalized. ``m`` is :data:`IR_MATH` or numpy's."""
    lo = m.floor(c)
    t = c - lo
    s = min(antialias_scale, 1.0)
    if s < 1.0:
        # the kernel's support (1 linear, 2 cubic) stretched to support / s
        first = int(math.floor(-(1.0 if mode == "linear" else 2.0) / s)) + 1
        # tap k's distance from c, in the kernel's units
        dist = [(float(k), (t * -1.0 + float(k)) * s) for k in range(first, 2 - first)]
        if mode == "linear":
            taps = [(lo + k, m.maximum(1.0 - m.abs(x), t * 0.0)) for k, x in dist]
        else:
            taps = [(lo + k, _keys(x, cubic_coeff_a, m)) for k, x in dist]
    elif mode == "linear":
        return [(lo, 1.0 - t), (lo + 1.0, t)]
    else:
        taps = [(lo + (k - 1.0), w) for k, w in enumerate(cubic_weights(t, cubic_coeff_a))]
    if exclude_outside:
        taps = [(p, m.where((p >= 0.0) & (p <= in_len - 1.0), w, w * 0.0)) for p, w in taps]
    elif s == 1.0:
        return taps
    total = taps[0][1]
    for _, w in taps[1:]:
        total = total + w
    return [(p, w / total) for p, w in taps]


def check_resize(shape, sizes, scales, mode: str, coordinate_transformation_mode: str,
                 nearest_mode: str, dtype: str) -> None:
    """Raise naming what is wrong with these resize arguments: resize's check."""
    bad = TEAttributeError
    if mode not in MODES:
        raise bad(f"resize: mode={mode!r} is not supported; mlcbook resizes with {MODES}. "
                  "Instead: use 'linear' for a smooth resize")
    if coordinate_transformation_mode not in COORDINATE_MODES:
        raise bad(f"resize: coordinate_transformation_mode={coordinate_transformation_mode!r} "
                  f"is not supported; use one of {COORDINATE_MODES}")
    if nearest_mode not in NEAREST_MODES:
        raise bad(f"resize: nearest_mode={nearest_mode!r} is not one of {NEAREST_MODES}")
    if len(sizes) != len(shape) or len(scales) != len(shape):
        raise bad(f"resize: sizes={tuple(sizes)} and scales={tuple(scales)} need one value "
                  f"per axis of the input {tuple(shape)}")
    if min(sizes, default=1) < 1 or min(scales, default=1) <= 0:
        raise bad(f"resize: sizes={tuple(sizes)} and scales={tuple(scales)} must be positive")
    if mode != "nearest" and not _e.is_float(dtype):
        raise TEDTypeError(f"resize: {mode} mode of a {dtype} tensor; cast it to a float type "
                           "first")


def resized_axes(shape, sizes, scales, coordinate_transformation_mode: str, roi) -> list[int]:
    """The axes a resize changes: a new length or scale, or a region other than the whole
    axis (tf_crop_and_resize)."""
    crop = coordinate_transformation_mode == "tf_crop_and_resize"
    return [d for d in range(len(shape)) if sizes[d] != shape[d] or scales[d] != 1.0
            or (crop and tuple(roi[d]) != (0.0, 1.0))]


def resize(x: Tensor, sizes, scales, mode: str = "nearest",
           coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", cubic_coeff_a: float = -0.75,
           exclude_outside: bool = False, roi=None, extrapolation_value: float = 0.0,
           antialias: bool = False, name: str = "resize") -> Tensor:
    """``x`` resized to ``sizes``; ``scales`` (output / input length per axis) map the
    coordinates; ``roi`` holds a (start, end) per axis for tf_crop_and_resize; ``antialias``
    widens linear and cubic kernels when downsampling. An axis whose length, scale and region
    stay is read as is."""
    check_tensor(x, "resize", "x")
    sizes, scales = tuple(int(s) for s in sizes), tuple(float(s) for s in scales)
    check_resize(x.shape, sizes, scales, mode, coordinate_transformation_mode, nearest_mode,
                 x.dtype)
    roi = tuple(tuple(r) for r in roi) if roi else ((0.0, 1.0),) * x.ndim
    resized = resized_axes(x.shape, sizes, scales, coordinate_transformation_mode, roi)
    crop = coordinate_transformation_mode == "tf_crop_and_resize"

    def coord(d, o):
        return source_coordinate(_e.cast("float64", o), coordinate_transformation_mode,
                                 scales[d], x.shape[d], sizes[d], roi[d])

    def outside(o):
        """Whether output point ``o`` maps outside the input (tf_crop_and_resize)."""
        out = None
        for d in resized:
            c = coord(d, o[d])
            cond = (c < 0.0) | (c > x.shape[d] - 1.0)
            out = cond if out is None else out | cond
        return out

    def extrapolated(o, value):
        if not crop or not resized:
            return value
        return _e.select(outside(o), const_like(extrapolation_value, value), value)

    def nearest(*o):
        idx = list(o)
        for d in resized:
            idx[d] = clamp(nearest_index(coord(d, o[d]), nearest_mode,
                                         lambda c: _e.cast("int32", _e.floor(c)),
                                         lambda c: _e.cast("int32", _e.ceil(c))), x.shape[d])
        return extrapolated(o, x[tuple(idx)])

    def tap_tables(d):
        """Axis ``d``'s taps for every output coordinate, an (index, weight) pair of 1-D
        stages per tap: a weight is computed once per coordinate, not once per output
        element and corner."""
        def taps(o):
            return axis_taps(coord(d, o), x.shape[d], mode, cubic_coeff_a, exclude_outside,
                             IR_MATH, scales[d] if antialias else 1.0)
        return [(compute_named((sizes[d],), ["o"], lambda o, k=k: clamp(
                    _e.cast("int32", taps(o)[k][0]), x.shape[d]), f"{name}_index{d}_{k}"),
                 compute_named((sizes[d],), ["o"], lambda o, k=k: taps(o)[k][1],
                               f"{name}_weight{d}_{k}"))
                for k in range(len(taps(_e.const(0, "int32"))))]

    tables = {d: tap_tables(d) for d in resized} if mode != "nearest" else {}

    def mixed(*o):
        # the 2**k (4**k) points around the source point, each weighted by the product of its
        # weights along the k resized axes
        corners = [(list(o), _e.const(1.0, "float64"))]
        for d in resized:
            corners = [(idx[:d] + [index[o[d]]] + idx[d + 1:], weight * w[o[d]])
                       for idx, weight in corners for index, w in tables[d]]
        total = None
        for idx, weight in corners:
            term = weight * _e.cast("float64", x[tuple(idx)])
            total = term if total is None else total + term
        return store(extrapolated(o, total), x.dtype)

    return compute_named(sizes, axis_names(x.ndim), nearest if mode == "nearest" else mixed,
                         name)

