"""``grid_sample`` and ``affine_grid``: ONNX's GridSample and AffineGrid, legalized to
:mod:`mlcbook.te.ops.grid_sample`, whose coordinate helpers this module's numpy references
run on arrays.

    >>> get("grid_sample").infer_type([TensorType((1, 3, 4, 4)), TensorType((1, 6, 5, 2))], {})
    Tensor((1, 3, 6, 5), "float32")
    >>> get("affine_grid").infer_type([TensorType((2, 2, 3))], {"size": (2, 1, 4, 5)})
    Tensor((2, 4, 5, 2), "float32")
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import OpShapeError
from ..te.ops.grid_sample import (affine_grid, base_grid, check_grid_sample, grid_sample,
                                  source_coordinate, tap_index, taps)
from ._infer import require_dtype
from .registry import REQUIRED, OpKind, register, register_legalization
from .resize import NP_MATH
from .types import TensorType

_FLOATS = ("float32", "float64")


def _grid_sample_infer(types, attrs):
    x, grid = types
    require_dtype("grid_sample", x, _FLOATS, "input x")
    require_dtype("grid_sample", grid, _FLOATS, "grid")
    check_grid_sample(x.shape, grid.shape, attrs["mode"], attrs["padding_mode"],
                      error=OpShapeError)
    return TensorType(x.shape[:2] + grid.shape[1:-1], x.dtype)


def _grid_sample_ref(x, grid, mode="linear", padding_mode="zeros", align_corners=0):
    r, sizes = x.ndim - 2, x.shape[2:]
    out_spatial = grid.shape[1:-1]
    channels_last = np.moveaxis(x, 1, -1).astype(grid.dtype)
    batch = np.arange(x.shape[0]).reshape((-1,) + (1,) * len(out_spatial))
    per_axis = []
    for a in range(r):
        c = source_coordinate(grid[..., r - 1 - a], sizes[a], mode, padding_mode,
                              bool(align_corners), NP_MATH)
        per_axis.append([(tap_index(p, sizes[a], padding_mode, bool(align_corners), NP_MATH), w)
                         for p, w in taps(c, mode, NP_MATH)])
    total = np.zeros(grid.shape[:-1] + (x.shape[1],), grid.dtype)
    for combo in itertools.product(*per_axis):
        idx = tuple(np.clip(i, 0, s - 1) for ((i, _), _), s in zip(combo, sizes))
        v = channels_last[(batch,) + idx]
        for (_, inside), w in combo:
            if inside is not None:
                v = v * inside[..., None]
            if w is not None:
                v = v * w[..., None]
        total += v
    return np.moveaxis(total, -1, 1).astype(x.dtype)


def _affine_grid_infer(types, attrs):
    theta, size = types[0], tuple(attrs["size"])
    require_dtype("affine_grid", theta, _FLOATS, "theta")
    r = len(size) - 2
    if r not in (2, 3) or theta.shape != (size[0], r, r + 1):
        raise OpShapeError(f"affine_grid: theta {theta.shape} and size {size} do not fit; "
                           "theta is (N, 2, 3) with size (N, C, H, W) or (N, 3, 4) with size "
                           "(N, C, D, H, W)")
    return TensorType((size[0],) + size[2:] + (r,), theta.dtype)


def _affine_grid_ref(theta, size, align_corners=0):
    spatial = tuple(size[2:])
    axes = [base_grid(n, bool(align_corners), np.arange(n, dtype=np.float64)) for n in spatial]
    pos = np.meshgrid(*axes, indexing="ij")
    # homogeneous positions, last axis first: (x, y[, z], 1)
    homo = np.stack(list(pos[::-1]) + [np.ones(spatial)], axis=-1)
    return np.einsum("...k,njk->n...j", homo, theta.astype(np.float64)).astype(theta.dtype)


register("grid_sample", kind=OpKind.OPAQUE, infer=_grid_sample_infer,
         reference=_grid_sample_ref, num_inputs=(2, 2),
         attrs={"mode": "linear", "padding_mode": "zeros", "align_corners": 0},
         doc="x sampled at the normalized positions of grid (nearest, linear or cubic)")
register("affine_grid", kind=OpKind.OPAQUE, infer=_affine_grid_infer,
         reference=_affine_grid_ref, attrs={"size": REQUIRED, "align_corners": 0},
         doc="the sampling grid of the affine transforms theta for an output of size")


@register_legalization("grid_sample")
def _legalize_grid_sample(ins, attrs, out_type):
    return grid_sample(ins[0], ins[1], attrs["mode"], attrs["padding_mode"],
                       bool(attrs["align_corners"]), name="grid_sample")


@register_legalization("affine_grid")
def _legalize_affine_grid(ins, attrs, out_type):
    return affine_grid(ins[0], attrs["size"], bool(attrs["align_corners"]), name="affine_grid")
