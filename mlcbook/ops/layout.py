"""Ops of blocked channel layouts (see :mod:`mlcbook.te.ops.layout`): ``to_blocked`` and
``from_blocked`` move a tensor between NCHW and NCHW[b]c, ``conv_nchwc`` and
``depthwise_nchwc`` convolve in the blocked layout. The graph pass
:func:`mlcbook.graph.passes.convert_layout` inserts them; models never do.

    >>> get("to_blocked").infer_type([TensorType((1, 64, 56, 56))], {"block": 16})
    Tensor((1, 4, 56, 56, 16), "float32")

Each is declared once from its te compute (:mod:`.declare`); :func:`blocked`,
:func:`blocked_weight` and :func:`depthwise_weight` lay out weights in numpy at compile time.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError
from ..te.ops import layout as te_layout
from . import declare
from ._infer import FLOATS, ints, require_dtype, same_dtype
from .registry import REQUIRED, OpKind


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


declare.op("to_blocked", te_layout.to_blocked, kind=OpKind.INJECTIVE,
           attrs={"block": REQUIRED, "groups": 1},
           empty=declare.empty_batch("to_blocked"),
           doc="NCHW -> NCHW[block]c: channels in blocks of `block`, innermost; each of "
               "`groups` groups padded with zeros to whole blocks")


declare.op("from_blocked", te_layout.from_blocked, kind=OpKind.INJECTIVE,
           attrs={"channels": None, "groups": 1},
           empty=declare.empty_batch("from_blocked"),
           doc="NCHW[b]c -> NCHW: `channels` of `groups` groups (default: every lane), each "
               "group's padding dropped")


def _blocked_conv(op: str, weight: str, kernel_axis: int, compute, doc: str):
    """Declare the blocked convolution ``op`` of weights of the form ``weight`` whose kernel
    is on the axes from ``kernel_axis``: ``compute(x, w, strides, pads, dilations, name=,
    **attrs)`` with the window's attributes filled in (the te compute checks the shapes)."""
    def check(types, attrs):
        same_dtype(op, types)
        require_dtype(op, types[0], FLOATS)

    def blocked_compute(x, w, *, strides=None, pads=None, dilations=None, name, **attrs):
        strides = ints(op, "strides", strides or (1, 1), 2)
        pads = ints(op, "pads", pads or (0, 0, 0, 0), 4)
        dilations = ints(op, "dilations", dilations or (1, 1), 2)
        out = compute(x, w, strides, pads, dilations, name=name, **attrs)  # checks the ranks
        if not nchwc_takes_pads(pads, w.shape[kernel_axis:kernel_axis + 2], dilations):
            raise OpAttributeError(f"{op}: padding wider than the kernel is not supported")
        return out

    attrs = {"strides": None, "pads": None, "dilations": None}
    declare.op(op, blocked_compute, kind=OpKind.OUT_ELEMWISE_FUSABLE, num_inputs=(2, 2),
               attrs=dict(attrs, group=1) if op == "conv_nchwc" else attrs, check=check,
               empty=declare.empty_batch(op), doc=f"{doc} on NCHW[c]c data with ({weight}) weights")


def depthwise_weight(w: np.ndarray, block: int) -> np.ndarray:
    """A depthwise conv's (C, 1, KH, KW) weights -> (C/block, KH, KW, block), in numpy: the
    weights of ``depthwise_nchwc``, each channel's taps in its vector lane."""
    c, _, kh, kw = w.shape
    return np.ascontiguousarray(w.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1))


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


_blocked_conv("conv_nchwc", "K/k, C/c/group, KH, KW, c, k", 2,
              lambda x, w, *geometry, name, group=1: te_layout.conv2d_nchwc(
                  x, w, *geometry, name=name, groups=group), "2-D convolution")
_blocked_conv("depthwise_nchwc", "C/c, KH, KW, c", 1, te_layout.depthwise_nchwc,
              "depthwise 2-D convolution")
