"""Ops of blocked channel layouts (see :mod:`mlcbook.te.ops.layout`): ``to_blocked`` and
``from_blocked`` move a tensor between NCHW and NCHW[b]c, ``conv_nchwc`` and
``depthwise_nchwc`` convolve in the blocked layout. The graph pass
:func:`mlcbook.graph.passes.convert_layout` inserts them; models never do.

    >>> get("to_blocked").infer_type([TensorType((1, 64, 56, 56))], {"block": 16})
    Tensor((1, 4, 56, 56, 16), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te.ops import layout as te_layout
from ._infer import FLOATS, ints, require_dtype, same_dtype
from .nn import window_out_size
from .registry import REQUIRED, OpKind, register, register_legalization
from .types import TensorType


def _to_blocked_infer(types, attrs):
    x, b, g = types[0], attrs["block"], attrs.get("groups", 1)
    if x.ndim < 3 or b < 1 or g < 1 or x.shape[1] % g:
        raise OpShapeError(f"to_blocked: groups={g} must divide the channels (axis 1) of "
                           f"{x.shape} and block={b} be positive")
    per = -(-(x.shape[1] // g) // b)
    return TensorType((x.shape[0], g * per, *x.shape[2:], b), x.dtype)


def _per_group(c: int, groups: int, block: int) -> tuple[int, int]:
    """(channels per group, blocks per group) of ``c`` channels in ``groups`` groups."""
    cg = c // groups
    return cg, -(-cg // block)


def blocked(x: np.ndarray, block: int, groups: int = 1) -> np.ndarray:
    """NCHW... -> NCHW...[block]c, in numpy; each group's channels padded with zeros to a
    multiple of ``block``."""
    n, c, *s = x.shape
    cg, per = _per_group(c, groups, block)
    y = x.reshape(n, groups, cg, *s)
    if per * block != cg:
        pad = [(0, 0)] * y.ndim
        pad[2] = (0, per * block - cg)
        y = np.pad(y, pad)
    y = y.reshape(n, groups * per, block, *s)
    return np.ascontiguousarray(np.moveaxis(y, 2, -1))


def unblocked(x: np.ndarray, channels: int | None = None, groups: int = 1) -> np.ndarray:
    """NCHW...[b]c -> NCHW..., in numpy: ``channels`` of ``groups`` groups (default: every
    lane), each group's padding dropped."""
    n, cb, *s, b = x.shape
    y = np.moveaxis(x, -1, 2).reshape(n, cb * b, *s)
    if channels is None or channels == cb * b:
        return np.ascontiguousarray(y)
    y = y.reshape(n, groups, cb * b // groups, *s)[:, :, :channels // groups]
    return np.ascontiguousarray(y.reshape(n, channels, *s))


def blocked_weight(w: np.ndarray, cin_block: int, cout_block: int,
                   groups: int = 1) -> np.ndarray:
    """OIHW -> (O'/co, I'/ci, H, W, ci, co), in numpy: the weights of ``conv_nchwc``, with
    each group's output channels and its input channels padded with zeros to multiples of
    the blocks (O', I': the padded counts)."""
    k, c, kh, kw = w.shape
    kg, kper = _per_group(k, groups, cout_block)
    cper = -(-c // cin_block)
    if kper * cout_block != kg or cper * cin_block != c:
        w = np.pad(w.reshape(groups, kg, c, kh, kw),
                   [(0, 0), (0, kper * cout_block - kg), (0, cper * cin_block - c), (0, 0),
                    (0, 0)])
        k, c = groups * kper * cout_block, cper * cin_block
    y = w.reshape(k // cout_block, cout_block, c // cin_block, cin_block, kh, kw)
    return np.ascontiguousarray(y.transpose(0, 2, 4, 5, 3, 1))


register("to_blocked", kind=OpKind.INJECTIVE, infer=_to_blocked_infer,
         reference=lambda x, block, groups=1: blocked(x, block, groups),
         attrs={"block": REQUIRED, "groups": 1},
         doc="NCHW -> NCHW[block]c: channels in blocks of `block`, innermost; each of "
             "`groups` groups padded with zeros to whole blocks")


def _from_blocked_infer(types, attrs):
    x = types[0]
    if x.ndim < 4:
        raise OpShapeError(f"from_blocked: the input must be (N, C/b, ..., b), got {x.shape}")
    lanes, g = x.shape[1] * x.shape[-1], attrs.get("groups", 1)
    c = attrs.get("channels") or lanes
    if g < 1 or c % g or x.shape[1] % g or c // g > lanes // g:
        raise OpShapeError(f"from_blocked: {x.shape[1]} blocks of {x.shape[-1]} in {g} groups "
                           f"cannot hold {c} channels")
    return TensorType((x.shape[0], c, *x.shape[2:-1]), x.dtype)


register("from_blocked", kind=OpKind.INJECTIVE, infer=_from_blocked_infer,
         reference=lambda x, channels=None, groups=1: unblocked(x, channels, groups),
         attrs={"channels": None, "groups": 1},
         doc="NCHW[b]c -> NCHW: `channels` of `groups` groups (default: every lane), each "
             "group's padding dropped")


def _geometry(attrs, kernel):
    strides = ints("conv_nchwc", "strides", attrs.get("strides") or (1, 1), 2)
    dilations = ints("conv_nchwc", "dilations", attrs.get("dilations") or (1, 1), 2)
    pads = ints("conv_nchwc", "pads", attrs.get("pads") or (0, 0, 0, 0), 4)
    return strides, dilations, pads


def _conv_infer(types, attrs):
    x, w = types
    same_dtype("conv_nchwc", types)
    require_dtype("conv_nchwc", x, FLOATS)
    g = attrs.get("group", 1)
    if x.ndim != 5 or w.ndim != 6 or g < 1 or x.shape[1] % g or w.shape[0] % g or (
            w.shape[1] * g, w.shape[4]) != (x.shape[1], x.shape[4]):
        raise OpShapeError(f"conv_nchwc: data must be (N, C/c, H, W, c) and weight "
                           f"(K/k, C/c/group, KH, KW, c, k) with group={g} dividing C/c and "
                           f"K/k; got {x.shape} and {w.shape}")
    strides, dil, pads = _geometry(attrs, w.shape[2:4])
    out = [window_out_size("conv_nchwc", x.shape[2 + d], pads[d], pads[2 + d], w.shape[2 + d],
                           strides[d], dil[d]) for d in range(2)]
    return TensorType((x.shape[0], w.shape[0], *out, w.shape[5]), x.dtype)


def _conv_ref(x, w, strides=None, pads=None, dilations=None, group=1):
    from .registry import get
    kb, cb, kh, kw, ci, k = w.shape
    w_oihw = w.transpose(0, 5, 1, 4, 2, 3).reshape(kb * k, cb * ci, kh, kw)
    y = get("conv").reference(unblocked(x), w_oihw, strides=strides, pads=pads,
                              dilations=dilations, group=group)
    return blocked(y, k)


register("conv_nchwc", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_conv_infer, reference=_conv_ref,
         attrs={"strides": None, "pads": None, "dilations": None, "group": 1},
         num_inputs=(2, 2),
         doc="2-D convolution on NCHW[c]c data with (K/k, C/c/group, KH, KW, c, k) weights")


def _depthwise_infer(types, attrs):
    x, w = types
    same_dtype("depthwise_nchwc", types)
    require_dtype("depthwise_nchwc", x, FLOATS)
    if x.ndim != 5 or w.ndim != 4 or (w.shape[0], w.shape[3]) != (x.shape[1], x.shape[4]):
        raise OpShapeError(f"depthwise_nchwc: data must be (N, C/c, H, W, c) and weight "
                           f"(C/c, KH, KW, c) with the same C/c and c; got {x.shape} and "
                           f"{w.shape}")
    strides, dil, pads = _geometry(attrs, w.shape[1:3])
    out = [window_out_size("depthwise_nchwc", x.shape[2 + d], pads[d], pads[2 + d],
                           w.shape[1 + d], strides[d], dil[d]) for d in range(2)]
    return TensorType((x.shape[0], x.shape[1], *out, x.shape[4]), x.dtype)


def _depthwise_ref(x, w, strides=None, pads=None, dilations=None):
    from .registry import get
    cb, kh, kw, c = w.shape
    w_oihw = w.transpose(0, 3, 1, 2).reshape(cb * c, 1, kh, kw)
    y = get("conv").reference(unblocked(x), w_oihw, strides=strides, pads=pads,
                              dilations=dilations, group=cb * c)
    return blocked(y, c)


def depthwise_weight(w: np.ndarray, block: int) -> np.ndarray:
    """A depthwise conv's (C, 1, KH, KW) weights -> (C/block, KH, KW, block), in numpy: the
    weights of ``depthwise_nchwc``, each channel's taps in its vector lane."""
    c, _, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1))


register("depthwise_nchwc", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_depthwise_infer,
         reference=_depthwise_ref, attrs={"strides": None, "pads": None, "dilations": None},
         num_inputs=(2, 2),
         doc="depthwise 2-D convolution on NCHW[c]c data with (C/c, KH, KW, c) weights")


@register_legalization("to_blocked")
def _lower_to_blocked(ins, attrs, out_type):
    return te_layout.to_blocked(ins[0], attrs["block"], name="to_blocked",
                                groups=attrs.get("groups", 1))


@register_legalization("from_blocked")
def _lower_from_blocked(ins, attrs, out_type):
    return te_layout.from_blocked(ins[0], name="from_blocked", channels=attrs.get("channels"),
                                  groups=attrs.get("groups", 1))


def nchwc_takes_pads(pads, kernel, dilations=None) -> bool:
    """Whether ``conv_nchwc`` can pad as ``pads`` (top, left, bottom, right) asks: a leading
    pad must be narrower than the dilated kernel (``layout.convert_layout`` leaves any
    other conv in NCHW).

        >>> nchwc_takes_pads((1, 1, 1, 1), (3, 3)), nchwc_takes_pads((4, 0, 4, 0), (3, 3))
        (True, False)
    """
    dil = tuple(dilations or (1, 1))
    pads = tuple(pads or (0, 0, 0, 0))
    return not any(pads[d] > 0 and pads[d] >= kernel[d] * dil[d] + 1 for d in range(2))


@register_legalization("conv_nchwc")
def _lower_conv_nchwc(ins, attrs, out_type):
    strides, dil, pads = _geometry(attrs, ins[1].shape[2:4])
    if not nchwc_takes_pads(pads, ins[1].shape[2:4], dil):
        raise OpAttributeError("conv_nchwc: padding wider than the kernel is not supported")
    return te_layout.conv2d_nchwc(ins[0], ins[1], strides, pads, dil, name="conv_nchwc",
                                  groups=attrs.get("group", 1))


@register_legalization("depthwise_nchwc")
def _lower_depthwise_nchwc(ins, attrs, out_type):
    strides, dil, pads = _geometry(attrs, ins[1].shape[1:3])
    if not nchwc_takes_pads(pads, ins[1].shape[1:3], dil):
        raise OpAttributeError("depthwise_nchwc: padding wider than the kernel is not supported")
    return te_layout.depthwise_nchwc(ins[0], ins[1], strides, pads, dil, name="depthwise_nchwc")
