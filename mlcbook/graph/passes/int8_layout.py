"""Channels-last activations for quantized CNNs (opt_level 3): the int8 convolutions and
what runs between them work on uint8 NHWC data.

The int8 conv kernel (:func:`~mlcbook.te.ops.int8_kernels.int8_conv2d`) sums its products
with pixels in rows and output channels innermost, the layout of an NHWC tensor. Fed NCHW
data, its copy gathers each pixel's channels from planes ``H * W`` bytes apart and its
requantizing epilogue reads every 16th sum. :func:`convert_int8_layout` gives every
``int8_conv2d`` ``layout="NHWC"``, a ``transpose`` to NHWC before it and one back after;
then the transpose back sinks through the max pools (pooled channels-last through a
5-D view, no copy) until it meets the next conv's transpose to NHWC, where the pair
cancels. A transpose left in front of the flatten that feeds an ``int8_dense`` disappears
into the dense layer's constant weights, whose columns are reordered to read the
channels-last pixels. What is left is one transpose after the first quantize (a free
reshape when the input has one channel)::

    >>> [c.op for c in convert_int8_layout(func).calls()]
    ['quantize_linear', 'transpose', 'int8_conv2d', 'reshape', 'max_pool', 'reshape', ...]

A conv with few filters leaves most of the product's 16 output lanes empty (8 filters: half).
Such a conv computes ``P`` neighbouring output pixels as one "wide pixel" instead
(:func:`group_pixels`): ``P * F`` filters over a window ``(P - 1) * stride`` wider, each
copy of the filters shifted by a stride, at ``P`` times the stride. Its NHWC output
``(N, OH, OW / P, P * F)`` is the same bytes as ``(N, OH, OW, F)``, a free view. When the
window's terms grow less than ``P``-fold, fewer dot products make the same sums: a 3x3 conv
of one channel sums 4 terms per window row for one pixel and for two.

A max pool whose windows lie side by side (2x2, stride 2) then folds into the conv before
it (``int8_conv2d(pool=(2, 2))``): the epilogue requantizes the largest sum of each window,
which is the largest requantized value when no multiplier is negative, and the pool's
kernel and the conv's full-size output are gone.
"""

from __future__ import annotations

import numpy as np

from ...ops.int8_kernels import pack_conv_int8, pack_int8, unpack_conv_int8, unpack_int8
from ...ops.types import Attrs
from ...te.ops.int8_kernels import PACK_LANES, conv_row_terms
from ...tir.x86_intrinsics import pairs_fit_int16
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator
from .fold import use_counts

#: transposes of a 4-D tensor: NCHW to channels-last (NHWC) and back
TO_NHWC, TO_NCHW = (0, 2, 3, 1), (0, 3, 1, 2)
#: what the pass moves through: quantized data only (float graphs keep their layouts)
_INT_TYPES = ("uint8", "int8")


def convert_int8_layout(func: Function) -> Function:
    """``func`` with its int8 convolutions on channels-last data and the layout kept between
    them, and the max pools that follow them folded in (see the module docstring)."""
    g = _Int8Layout().visit_function(func)
    return _FoldPools(use_counts(g)).visit_function(g)


def _transpose(x: Expr, perm: tuple) -> Call:
    return Call("transpose", (x,), Attrs(perm=perm))


def _to_channels_last(x: Expr) -> Call:
    """``x`` (N, C, H, W) in NHWC; with one channel that is the same bytes, a free view."""
    n, c, h, w = x.shape
    if c == 1:
        return Call("reshape", (x,), Attrs(shape=(n, h, w, c)))
    return _transpose(x, TO_NHWC)


def _channels_last_source(e: Expr) -> Expr | None:
    """``v`` when ``e`` is ``v`` (NHWC) transposed back to NCHW."""
    if isinstance(e, Call) and e.op == "transpose" and len(e.shape) == 4 and \
            tuple(e.attrs.get("perm") or ()) == TO_NCHW:
        return e.args[0]
    return None


class _Int8Layout(ExprMutator):
    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op == "int8_conv2d" and new.attrs["layout"] == "NCHW":
            return self._conv(new)
        if new.op == "int8_dense" and _is_flatten(new.args[0]):
            return self._dense(new, new.args[0])
        src = _channels_last_source(new.args[0]) if new.args else None
        if src is None or new.type.dtype not in _INT_TYPES:
            return new
        if new.op == "transpose" and tuple(new.attrs.get("perm") or ()) == TO_NHWC:
            return src
        if new.op == "max_pool" and len(new.shape) == 4 and len(new.args) == 1:
            return self._pool(new, src)
        return new

    def _conv(self, conv: Call) -> Call:
        x = conv.args[0]
        src = _channels_last_source(x)
        xl = src if src is not None else _to_channels_last(x)
        y = Call("int8_conv2d", (xl, *conv.args[1:]), Attrs(dict(conv.attrs, layout="NHWC")),
                 conv.name)
        return _transpose(group_pixels(y), TO_NCHW)

    def _pool(self, pool: Call, src: Expr) -> Call:
        # (N, H, W, C) viewed as (N, 1, H, W, C): a 3-D pool whose window is one channel
        n, h, w, c = src.shape
        a = pool.attrs
        p = tuple(a.get("pads") or (0, 0, 0, 0))
        attrs = dict(a, kernel_shape=tuple(a["kernel_shape"]) + (1,),
                     strides=tuple(a.get("strides") or (1, 1)) + (1,),
                     pads=(p[0], p[1], 0, p[2], p[3], 0),
                     dilations=tuple(a.get("dilations") or (1, 1)) + (1,))
        view = Call("reshape", (src,), Attrs(shape=(n, 1, h, w, c)))
        pooled = Call("max_pool", (view,), Attrs(attrs), pool.name)
        oh, ow = pool.shape[2:]
        return _transpose(Call("reshape", (pooled,), Attrs(shape=(n, oh, ow, c))), TO_NCHW)

    def _dense(self, dense: Call, flat: Call) -> Call:
        # flatten(NCHW) @ W.T == flatten(NHWC) @ W'.T with W's columns in NHWC order
        src = _channels_last_source(flat.args[0])
        wp = dense.args[1]
        if src is None or not isinstance(wp, Constant):
            return dense
        n, h, w, c = src.shape
        units = dense.attrs["units"]
        cols = unpack_int8(wp.data, units, c * h * w).reshape(units, c, h, w)
        packed = pack_int8(np.ascontiguousarray(cols.transpose(0, 2, 3, 1)).reshape(units, -1))
        x = Call("reshape", (src,), Attrs(shape=(n, h * w * c)))
        return Call("int8_dense", (x, Constant(packed, wp.name, wp.owner), *dense.args[2:]),
                    dense.attrs, dense.name)


def pixel_group(conv: Call) -> int:
    """How many neighbouring output pixels the NHWC ``int8_conv2d`` ``conv`` should compute
    as one (1: none): the most whose filters fit one packed tile of 16 columns, that divide
    the output's width, and whose widened window rows sum fewer terms than the pixels did
    one by one."""
    a = conv.attrs
    _, _, ow, f = conv.shape
    c, kw, s = conv.args[0].shape[3], a["kernel_shape"][1], a["strides"][1]
    if a["layout"] != "NHWC" or a["dilations"][1] != 1 or not all(
            isinstance(e, Constant) for e in conv.args[1:]):
        return 1
    fits = [p for p in range(2, PACK_LANES // f + 1) if ow % p == 0 and
            conv_row_terms(c, kw + (p - 1) * s) < p * conv_row_terms(c, kw)]
    return max(fits, default=1)


def group_pixels(conv: Call) -> Expr:
    """``conv`` (an NHWC ``int8_conv2d``) computing :func:`pixel_group` pixels at once,
    viewed back to its own shape (the module docstring says why)."""
    p = pixel_group(conv)
    if p == 1:
        return conv
    a = conv.attrs
    x, wp, bias, mult = conv.args
    (kh, kw), s, c, f = a["kernel_shape"], a["strides"][1], x.shape[3], a["channels"]
    w = unpack_conv_int8(wp.data, f, c, (kh, kw))
    wide = np.zeros((p * f, c, kh, kw + (p - 1) * s), np.int8)
    for k in range(p):   # the k-th pixel's filters, shifted k strides right
        wide[k * f:(k + 1) * f, ..., k * s:k * s + kw] = w
    n, oh, ow, _ = conv.shape
    packed = pack_conv_int8(wide)
    narrow = int(bool(a["narrow"]) and pairs_fit_int16(packed))   # new pairs of weights
    args = (x, Constant(packed, f"{wp.name}_x{p}" if wp.name else "", wp.owner),
            *(Constant(np.tile(e.data, p), f"{e.name}_x{p}" if e.name else "", e.owner)
              for e in (bias, mult)))
    y = Call("int8_conv2d", args, Attrs(dict(
        a, channels=p * f, kernel_shape=(kh, kw + (p - 1) * s),
        strides=(a["strides"][0], p * s), narrow=narrow)), conv.name)
    return Call("reshape", (y,), Attrs(shape=(n, oh, ow, f)))


class _FoldPools(ExprMutator):
    """``max_pool(view(int8_conv2d))`` -> ``view(int8_conv2d(pool=...))``: a max pool whose
    windows lie side by side, after a channels-last conv that nothing else reads, whose
    multipliers are all at least 0 (requantizing keeps the sums' order: the largest sum
    requantizes to the largest output)."""

    def __init__(self, uses: dict[int, int]):
        super().__init__()
        self.uses = uses

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op != "max_pool" or len(new.shape) != 5:
            return new
        chain, e = [], call.args[0]   # the pool's view of the conv, and a grouping's view
        while isinstance(e, Call) and e.op == "reshape":
            chain.append(e)
            e = e.args[0]
        if not (isinstance(e, Call) and e.op == "int8_conv2d") or \
                any(self.uses.get(id(n), 0) != 1 for n in (*chain, e)):
            return new
        conv = self.visit(e)
        window = _side_by_side(new.attrs, conv, new.args[0].shape)
        if window is None:
            return new
        pixels = new.args[0].shape[3] // conv.shape[2]
        pooled = Call("int8_conv2d", conv.args, Attrs(dict(
            conv.attrs, pool=window, pixels=pixels)), conv.name)
        return Call("reshape", (pooled,), Attrs(shape=new.shape))


def _side_by_side(attrs, conv: Call, view: tuple) -> tuple | None:
    """The pool window ``(ph, pw)`` of max pool ``attrs`` over ``view`` (the 5-D view
    (N, 1, H, W, C) of NHWC data) when :class:`_FoldPools` may fold it into ``conv``: windows
    side by side covering the pixels (no padding, dilation or partial window), the conv's
    channel groups of whole pixels inside a window, requantized uint8/int8 with multipliers
    of at least 0."""
    a = conv.attrs
    ks, st = tuple(attrs["kernel_shape"]), tuple(attrs.get("strides") or (1, 1, 1))
    (ph, pw, pc), (n, _, h, w, c) = ks, view
    pixels = w // conv.shape[2]
    mult = conv.args[3]
    # the view must be the conv's pixels: (N, OH, OW * P, F) for its (N, OH, OW, P * F)
    if (n, h, w, c * pixels) != (conv.shape[0], conv.shape[1], pixels * conv.shape[2],
                                 conv.shape[3]) or \
            a["layout"] != "NHWC" or tuple(a["pool"]) != (1, 1) or a["dtype"] == "int32" or \
            ks != st or pc != 1 or any(attrs.get("pads") or ()) or \
            any(d != 1 for d in attrs.get("dilations") or ()) or \
            (attrs.get("ceil_mode") and (h % ph or w % pw)) or pw % pixels or \
            not isinstance(mult, Constant) or not np.all(mult.data >= 0):
        return None
    return ph, pw


def _is_flatten(e: Expr) -> bool:
    """Whether ``e`` reshapes a 4-D tensor to (N, C * H * W)."""
    return isinstance(e, Call) and e.op in ("flatten", "reshape") and len(e.shape) == 2 and \
        len(e.args[0].shape) == 4 and e.shape[0] == e.args[0].shape[0]
