"""``resize``: ONNX's Resize (and Upsample) in nearest and linear modes.

    >>> y = resize(x, sizes=(1, 3, 8, 8), scales=(1, 1, 2, 2), mode="linear")

Each output coordinate ``o`` of an axis maps to a source coordinate ``c`` by the
``coordinate_transformation_mode`` (:func:`source_coordinate`, written once for numpy arrays
and loop-IR expressions alike). ``nearest`` reads the source element ``c`` rounds to
(``nearest_mode``); ``linear`` mixes the two around ``c`` on every resized axis. Source
indices past an edge read the edge. Coordinates are computed in float64, as onnx's reference
does, so that ties round the same way.
"""

from __future__ import annotations

from ...errors import TEError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import axis_names, check_tensor, clamp, compute_named, store

MODES = ("nearest", "linear")
COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                    "asymmetric")
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def source_coordinate(o, mode: str, scale: float, in_len: int, out_len: int):
    """The source coordinate of output coordinate ``o`` (a float numpy array or a float64
    expression) on an axis of ``in_len`` resized to ``out_len`` by ``scale``. As in onnx's
    reference, align_corners and pytorch_half_pixel divide by the unrounded output length
    ``scale * in_len``."""
    out_exact = scale * in_len
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


def cubic_weights(t, a: float = -0.75) -> list:
    """The weights of the four elements at offsets -1, 0, 1, 2 from ``floor(c)`` for the
    fraction ``t = c - floor(c)`` (Keys' cubic convolution with parameter ``a``; ``t`` an
    array or an expression)."""
    def near(s):  # |s| <= 1
        return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0

    def far(s):  # 1 < |s| < 2
        return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a
    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


def check_resize(shape, sizes, scales, mode: str, coordinate_transformation_mode: str,
                 nearest_mode: str, dtype: str, error=TEError) -> None:
    """Raise ``error`` naming what is wrong with these resize arguments."""
    if mode not in MODES:
        raise error(f"resize: mode={mode!r} is not supported; mlcbook resizes with {MODES}. "
                    "Instead: use 'linear' for a smooth resize")
    if coordinate_transformation_mode not in COORDINATE_MODES:
        raise error(f"resize: coordinate_transformation_mode={coordinate_transformation_mode!r} "
                    f"is not supported; use one of {COORDINATE_MODES}")
    if nearest_mode not in NEAREST_MODES:
        raise error(f"resize: nearest_mode={nearest_mode!r} is not one of {NEAREST_MODES}")
    if len(sizes) != len(shape) or len(scales) != len(shape):
        raise error(f"resize: sizes={tuple(sizes)} and scales={tuple(scales)} need one value "
                    f"per axis of the input {tuple(shape)}")
    if min(sizes, default=1) < 1 or min(scales, default=1) <= 0:
        raise error(f"resize: sizes={tuple(sizes)} and scales={tuple(scales)} must be positive")
    if mode == "linear" and not _e.is_float(dtype):
        raise error(f"resize: linear mode of a {dtype} tensor; cast it to a float type first")


def resize(x: Tensor, sizes, scales, mode: str = "nearest",
           coordinate_transformation_mode: str = "half_pixel",
           nearest_mode: str = "round_prefer_floor", name: str = "resize") -> Tensor:
    """``x`` resized to ``sizes``; ``scales`` (output / input length per axis) map the
    coordinates. An axis whose length and scale stay is read as is."""
    check_tensor(x, "resize", "x")
    sizes, scales = tuple(int(s) for s in sizes), tuple(float(s) for s in scales)
    check_resize(x.shape, sizes, scales, mode, coordinate_transformation_mode, nearest_mode,
                 x.dtype)
    resized = [d for d in range(x.ndim) if sizes[d] != x.shape[d] or scales[d] != 1.0]

    def coord(d, o):
        return source_coordinate(_e.cast("float64", o), coordinate_transformation_mode,
                                 scales[d], x.shape[d], sizes[d])

    def floor_int(c):
        return _e.cast("int32", _e.floor(c))

    def nearest(*o):
        idx = list(o)
        for d in resized:
            idx[d] = clamp(nearest_index(coord(d, o[d]), nearest_mode, floor_int,
                                         lambda c: _e.cast("int32", _e.ceil(c))), x.shape[d])
        return x[tuple(idx)]

    def linear(*o):
        # the 2**k corners around the source point, each weighted by the product of its
        # distances along the k resized axes
        corners = [(list(o), _e.const(1.0, "float64"))]
        for d in resized:
            c = coord(d, o[d])
            lo = floor_int(c)
            w = c - _e.cast("float64", lo)
            nxt = []
            for idx, weight in corners:
                for k, wk in ((lo, 1.0 - w), (lo + 1, w)):
                    nxt.append((idx[:d] + [clamp(k, x.shape[d])] + idx[d + 1:], weight * wk))
            corners = nxt
        total = None
        for idx, weight in corners:
            term = weight * _e.cast("float64", x[tuple(idx)])
            total = term if total is None else total + term
        return store(total, x.dtype)

    return compute_named(sizes, axis_names(x.ndim), nearest if mode == "nearest" else linear,
                         name)
