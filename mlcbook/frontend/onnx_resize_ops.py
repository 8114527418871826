"""Converters of ONNX's ``Resize`` and ``Upsample`` onto the graph op ``resize`` (the output
sizes and the coordinate scales are resolved at import from the ``scales`` or ``sizes``
input, ``axes`` and ``keep_aspect_ratio_policy`` included), and of ``RoiAlign``, whose
default coordinate mode changed at opset 16. (``GridSample``, ``AffineGrid`` and
``DeformConv`` import as their declarations say: :mod:`mlcbook.ops.resize`.)

    >>> CONVERTERS["Upsample"].attrs
    frozenset({'mode', 'scales'})

Nearest, linear and cubic modes are supported with every coordinate transformation
(``tf_crop_and_resize`` reads its region from the constant ``roi`` input), with
``antialias`` too.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpAttributeError
from ..te.ops.resize import COORDINATE_MODES, MODES
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

_RESIZE_ATTRS = ("mode", "coordinate_transformation_mode", "nearest_mode", "axes",
                 "keep_aspect_ratio_policy", "antialias", "cubic_coeff_a", "exclude_outside",
                 "extrapolation_value")


def _check_resize(attrs):
    out = []
    mode = attrs.get("mode", "nearest")
    if mode not in MODES:
        out.append(f"mode={mode!r} (mlcbook resizes with {', '.join(MODES)})")
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    if ctm not in COORDINATE_MODES:
        out.append(f"coordinate_transformation_mode={ctm!r} (supported: "
                   f"{', '.join(COORDINATE_MODES)})")
    return out


def _resolve(x_shape, axes, scales, sizes, policy):
    """(sizes, scales) for every axis from the node's ``scales`` or ``sizes`` on ``axes``."""
    shape = list(x_shape)
    full_sizes, full_scales = list(shape), [1.0] * len(shape)
    if sizes is not None and sizes.size:
        want = [int(s) for s in sizes.reshape(-1)]
        ratios = [w / shape[a] for w, a in zip(want, axes)]
        if policy != "stretch":
            s = min(ratios) if policy == "not_larger" else max(ratios)
            ratios = [s] * len(axes)
            want = [int(math.floor(s * shape[a] + 0.5)) for a in axes]
        for a, w, r in zip(axes, want, ratios):
            full_sizes[a], full_scales[a] = w, r
    elif scales is not None and scales.size:
        for a, s in zip(axes, scales.reshape(-1).tolist()):
            full_sizes[a], full_scales[a] = int(math.floor(shape[a] * s)), float(s)
    else:
        raise Unsupported("neither scales nor sizes is given")
    return tuple(full_sizes), tuple(full_scales)


@converter("Resize", attrs=_RESIZE_ATTRS, static=(1, 2, 3), check=_check_resize)
@guard_dtype
def _resize(cx, ins, attrs):
    x = ins[0]
    rank = len(x.shape)
    axes = [a % rank for a in attrs.get("axes", range(rank))]
    policy = attrs.get("keep_aspect_ratio_policy", "stretch")
    sizes, scales = _resolve(x.shape, axes, cx.static(2, "scales"), cx.static(3, "sizes"),
                             policy)
    ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
    roi = [(0.0, 1.0)] * rank
    if ctm == "tf_crop_and_resize":
        given = cx.static(1, "roi")
        if given is None or given.size != 2 * len(axes):
            raise Unsupported(f"tf_crop_and_resize needs roi with {2 * len(axes)} values "
                              "(a start and an end per resized axis)")
        given = given.reshape(-1).tolist()
        for k, a in enumerate(axes):
            roi[a] = (float(given[k]), float(given[k + len(axes)]))
    return cx.call("resize", x, sizes=sizes, scales=scales, mode=attrs.get("mode", "nearest"),
                   coordinate_transformation_mode=ctm,
                   nearest_mode=attrs.get("nearest_mode", "round_prefer_floor"),
                   cubic_coeff_a=float(attrs.get("cubic_coeff_a", -0.75)),
                   exclude_outside=int(attrs.get("exclude_outside", 0)), roi=tuple(roi),
                   extrapolation_value=float(attrs.get("extrapolation_value", 0.0)),
                   antialias=int(attrs.get("antialias", 0)))


@converter("Upsample", attrs=("mode", "scales"), static=(1,), check=_check_resize)
@guard_dtype
def _upsample(cx, ins, attrs):
    # Upsample (opsets 7 to 9) maps coordinates as Resize's "asymmetric" with floor rounding
    x = ins[0]
    scales = cx.static(1, "scales")
    if scales is None:
        scales = np.asarray(attrs.get("scales", ()), np.float32)
    sizes, scales = _resolve(x.shape, list(range(len(x.shape))), scales, None, "stretch")
    return cx.call("resize", x, sizes=sizes, scales=scales, mode=attrs.get("mode", "nearest"),
                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")


@converter("RoiAlign", attrs=("coordinate_transformation_mode", "mode", "output_height",
                              "output_width", "sampling_ratio", "spatial_scale"))
@guard_dtype
def _roi_align(cx, ins, attrs):
    # before opset 16 RoiAlign had no coordinate_transformation_mode and meant what is now
    # "output_half_pixel"; from 16 on, a node without it means "half_pixel" (the op's default)
    attrs = {"coordinate_transformation_mode": "output_half_pixel" if cx.opset < 16 else
             "half_pixel", **attrs}
    try:
        return cx.call("roi_align", *ins, **attrs)
    except OpAttributeError as e:   # (sampling_ratio=0: adaptive sampling, refused)
        raise Unsupported(e.message) from None


__all__ = ["CONVERTERS"]
