"""ONNX's ``RoiAlign``: each region of interest of a feature map pooled to a fixed size.

    >>> y = roi_align(x, rois, batch_indices, output_height=7, output_width=7,
    ...               sampling_ratio=2)     # x (N, C, H, W), rois (R, 4) -> y (R, C, 7, 7)

Region ``r`` is ``rois[r] = (x1, y1, x2, y2)`` of image ``batch_indices[r]``, scaled by
``spatial_scale`` (and shifted by half a pixel in ``half_pixel`` mode). It is cut into
``output_height x output_width`` bins; each bin samples a ``sampling_ratio x
sampling_ratio`` grid of points at their centers, bilinearly, and pools them by their
average (``avg``) or maximum (``max``, of each point's four weighted taps). A point more
than one pixel outside the map counts 0; one less than a pixel outside reads the border.

ONNX's ``sampling_ratio=0`` takes ``ceil(roi size / output size)`` points per bin: a number
that depends on the rois' values, which a kernel of static loops cannot have; it is refused.
"""

from __future__ import annotations

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from ...tir.stmt import KEEP_MATERIALIZED
from .. import reduction as _r
from ..tensor import Tensor
from .grid_sample import taps
from .resize import IR_MATH
from .util import check_tensor, clamp, compute_dtype, compute_named, reduce_stage

MODES = ("avg", "max")
COORDINATE_MODES = ("half_pixel", "output_half_pixel")


def check_roi_align(x_shape, rois_shape, indices_shape, mode: str,
                    coordinate_transformation_mode: str, output_height: int,
                    output_width: int, sampling_ratio: int) -> None:
    """Raise naming what is wrong with these roi_align arguments."""
    if mode not in MODES:
        raise TEAttributeError(f"roi_align: mode={mode!r} is not one of {', '.join(MODES)}. "
                               "Instead: use 'avg' or 'max'")
    if coordinate_transformation_mode not in COORDINATE_MODES:
        raise TEAttributeError(
            f"roi_align: coordinate_transformation_mode={coordinate_transformation_mode!r} is "
            f"not one of {', '.join(COORDINATE_MODES)}")
    for a, v in (("output_height", output_height), ("output_width", output_width)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise TEAttributeError(f"roi_align: {a}={v!r} must be a positive int")
    if isinstance(sampling_ratio, bool) or not isinstance(sampling_ratio, int) or \
            sampling_ratio < 0:
        raise TEAttributeError(f"roi_align: sampling_ratio={sampling_ratio!r} must be an int "
                               ">= 1. Instead: give the number of points per bin side, e.g. 2")
    if sampling_ratio == 0:
        raise TEAttributeError(
            "roi_align: sampling_ratio=0 (adaptive: ceil(roi size / output size) points per "
            "bin) depends on the rois' values, which a compiled kernel does not know. "
            "Instead: give sampling_ratio >= 1 (2 is common)")
    if len(x_shape) != 4:
        raise TEShapeError(f"roi_align: x has shape {tuple(x_shape)}; it must be 4-D "
                           "(N, C, H, W)")
    if len(rois_shape) != 2 or rois_shape[1] != 4 or tuple(indices_shape) != rois_shape[:1]:
        raise TEShapeError(f"roi_align: rois {tuple(rois_shape)} and batch_indices "
                           f"{tuple(indices_shape)} do not fit. Instead: give rois of shape "
                           "(R, 4), one (x1, y1, x2, y2) per region, and batch_indices (R,)")


def roi_align(x: Tensor, rois: Tensor, batch_indices: Tensor,
              coordinate_transformation_mode: str = "half_pixel", mode: str = "avg",
              output_height: int = 1, output_width: int = 1, sampling_ratio: int = 0,
              spatial_scale: float = 1.0, name: str = "roi_align") -> Tensor:
    """``y[r, c, ph, pw]``: bin ``(ph, pw)`` of region ``r`` of ``x[batch_indices[r], c]``,
    pooled (see the module). Stages: the sample coordinates of each region along each axis
    (``<name>_y``, ``<name>_x``) and the pooling."""
    for t, arg in ((x, "x"), (rois, "rois"), (batch_indices, "batch_indices")):
        check_tensor(t, "roi_align", arg)
    check_roi_align(x.shape, rois.shape, batch_indices.shape, mode,
                    coordinate_transformation_mode, output_height, output_width,
                    sampling_ratio)
    if not (_e.is_float(x.dtype) and _e.is_float(rois.dtype)) or \
            not batch_indices.dtype.startswith("int"):
        raise TEDTypeError(f"roi_align: x is {x.dtype}, rois {rois.dtype} and batch_indices "
                           f"{batch_indices.dtype}. Instead: give float x and rois and integer "
                           "batch_indices")
    n_img, _, height, width = x.shape
    dt = compute_dtype(x.dtype)
    half = coordinate_transformation_mode == "half_pixel"
    sr = sampling_ratio

    def samples(lo: int, bins: int, axis: str) -> Tensor:
        """``s[r, p, i]``: sample ``i`` of bin ``p`` of region ``r`` along an axis whose
        region starts at ``rois[:, lo]`` and ends at ``rois[:, lo + 2]``."""
        def body(r, p, i):
            start = _e.cast(dt, rois[r, lo]) * spatial_scale - (0.5 if half else 0.0)
            size = _e.cast(dt, rois[r, lo + 2]) * spatial_scale - (0.5 if half else 0.0) - start
            if not half:    # (ONNX's older mode makes a malformed region one pixel wide)
                size = _e.max(size, _e.const(1.0, dt))
            step = size * (1.0 / bins)
            return start + _e.cast(dt, p) * step + (_e.cast(dt, i) + 0.5) * step * (1.0 / sr)
        return compute_named((rois.shape[0], bins, sr), ["r", "p", "i"], body,
                             f"{name}_{axis}", attrs={KEEP_MATERIALIZED: True})

    ys, xs = samples(1, output_height, "y"), samples(0, output_width, "x")

    def axis_taps(c, size: int):
        """[(index, weight)] of the two taps at ``c``, which reads the border within a pixel
        outside the axis (the caller zeroes a point further out)."""
        c = IR_MATH.minimum(IR_MATH.maximum(c, 0.0), size - 1.0)
        return [(clamp(IR_MATH.trunc(p), size), w) for p, w in taps(c, "linear", IR_MATH)]

    iy, ix = _r.reduce_axis(sr, name="iy"), _r.reduce_axis(sr, name="ix")

    def body(r, ch, ph, pw):
        b = _e.cast("int32", batch_indices[r])
        b = clamp(_e.select(b < 0, b + n_img, b), n_img)
        y, xx = ys[r, ph, iy], xs[r, pw, ix]
        inside = (y >= -1.0) & (y <= float(height)) & (xx >= -1.0) & (xx <= float(width))
        parts = [wy * wx * _e.cast(dt, x[b, ch, i, j])
                 for i, wy in axis_taps(y, height) for j, wx in axis_taps(xx, width)]
        v = parts[0]
        for p in parts[1:]:
            v = v + p if mode == "avg" else _e.max(v, p)
        v = _e.select(inside, v, _e.const(0.0, dt))
        if mode == "avg":
            return _r.sum(v * (1.0 / (sr * sr)), axis=[iy, ix])
        return _r.max(v, axis=[iy, ix])

    shape = (rois.shape[0], x.shape[1], output_height, output_width)
    return reduce_stage(shape, ["r", "c", "ph", "pw"], body, x.dtype, name)
