"""Blocked channel layouts (NCHW[x]c) and the convolutions that read and write them.

``NCHW16c`` stores a (N, C, H, W) tensor as (N, C/16, H, W, 16): the 16 channels of one pixel
sit next to each other, so one vector register holds them. A convolution in that layout
computes 16 output channels of a pixel with one vector FMA per input channel and kernel
tap: the input value is broadcast, the weights of 16 output channels are one vector load
(weights packed as (K/16, C/c, KH, KW, c, 16)), and the result is one contiguous store.

    >>> xb = to_blocked(x, 16)                      # (1, 64, 56, 56) -> (1, 4, 56, 56, 16)
    >>> yb = conv2d_nchwc(xb, wb, stride=1, padding=1)
    >>> y = from_blocked(yb)                        # back to (1, K, 56, 56)
"""

from __future__ import annotations

from ...errors import TEAttributeError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import check_tensor, compute_named, ints, need_rank, pair, scaled


def to_blocked(x: Tensor, block: int, name: str = "to_blocked", groups: int = 1) -> Tensor:
    """(N, C, *S) -> (N, G * ceil(C/G / block), *S, block): the channels of each of ``groups``
    groups in blocks of ``block``, the last block of a group padded with zeros when
    ``block`` does not divide C/G (1000 channels in blocks of 16: 63 blocks, 8 zeros)."""
    check_tensor(x, "to_blocked", "x")
    need_rank("to_blocked", x.shape, 3, "the data", "(N, C, *spatial)")
    n, c, *s = x.shape
    if block < 1 or groups < 1:
        raise TEAttributeError(f"to_blocked: block={block} and groups={groups} must be "
                               "positive")
    if c % groups:
        raise TEShapeError(f"to_blocked: {groups} groups do not divide the {c} channels of "
                           f"the data {x.shape}; Instead: pick a divisor of {c}")
    cg = c // groups
    per = -(-cg // block)
    names = ["n", "cb"] + [f"s{d}" for d in range(len(s))] + ["ci"]
    if per * block == cg:
        return compute_named((n, c // block, *s, block), names,
                             lambda nn, cb, *rest: x[(nn, scaled(cb, block) + rest[-1])
                                                     + rest[:-1]], name)

    def body(nn, cb, *rest):
        inner = scaled(cb % per, block) + rest[-1]
        channel = _e.min(scaled(cb // per, cg) + inner, c - 1)   # in bounds in the padding too
        return _e.select(inner < cg, x[(nn, channel) + rest[:-1]], _e.const(0, x.dtype))

    return compute_named((n, groups * per, *s, block), names, body, name)


def from_blocked(x: Tensor, name: str = "from_blocked", channels: int | None = None,
                 groups: int = 1) -> Tensor:
    """(N, C'/b, *S, b) -> (N, C, *S), the inverse of :func:`to_blocked`: ``channels`` (C,
    default C') of ``groups`` groups, the padding of each group's last block dropped."""
    check_tensor(x, "from_blocked", "x")
    need_rank("from_blocked", x.shape, 4, "the data", "(N, C/b, *spatial, b)")
    n, cb, *s, b = x.shape
    c = cb * b if channels is None else channels
    names = ["n", "c"] + [f"s{d}" for d in range(len(s))]
    if c == cb * b:
        return compute_named((n, c, *s), names,
                             lambda nn, ch, *rest: x[(nn, ch // b) + tuple(rest) + (ch % b,)],
                             name)
    if groups < 1 or c % groups or cb % groups or (cb // groups) * b < c // groups:
        raise TEShapeError(f"from_blocked: {cb} blocks of {b} in {groups} groups cannot hold "
                           f"{c} channels of the data {x.shape}")
    cg, per = c // groups, cb // groups

    def body(nn, ch, *rest):
        inner = ch % cg
        return x[(nn, scaled(ch // cg, per) + inner // b) + tuple(rest) + (inner % b,)]

    return compute_named((n, c, *s), names, body, name)


def _out(op: str, size: int, before: int, after: int, kernel: int, stride: int,
         dilation: int) -> int:
    out = (size + before + after - dilation * (kernel - 1) - 1) // stride + 1
    if out < 1:
        raise TEShapeError(f"{op}: the window ({kernel} taps, dilation {dilation}) does not "
                           f"fit in {size} + padding {before}+{after}")
    return out


def conv2d_nchwc(data: Tensor, weight: Tensor, stride=1, padding=(0, 0, 0, 0), dilation=1,
                 name: str = "conv_nchwc", groups: int = 1) -> Tensor:
    """2-D convolution in blocked layouts: data (N, C/c, H, W, c), weight
    (K/k, C/c, KH, KW, c, k) -> (N, K/k, OH, OW, k)::

        out[n, kb, y, x, k] = sum(pad(data)[n, cb, y*sh + ry*dh, x*sw + rx*dw, ci]
                                  * weight[kb, cb, ry, rx, ci, k])

    With ``groups`` G, the data's blocks and the weight's output blocks are G groups of
    equal count, the weight holds one group's input blocks, and output block ``kb`` reads
    the input blocks of its group (``kb // (K/k/G)``) only.
    """
    op = "conv2d_nchwc"
    check_tensor(data, op, "data")
    check_tensor(weight, op, "weight")
    if data.ndim != 5 or weight.ndim != 6:
        raise TEShapeError(f"{op}: data must be (N, C/c, H, W, c) and weight "
                           f"(K/k, C/c, KH, KW, c, k); got {data.shape} and {weight.shape}")
    n, cb, h, w, ci = data.shape
    kb, wcb, kh, kw, wci, k = weight.shape
    if groups < 1 or cb % groups or kb % groups or (wcb * groups, wci) != (cb, ci):
        raise TEShapeError(f"{op}: weight {weight.shape} is for {wcb} blocks of {wci} input "
                           f"channels per group but data {data.shape} has {cb} blocks of "
                           f"{ci} in {groups} groups")
    sh, sw = pair(stride, op, "stride")
    dh, dw = pair(dilation, op, "dilation")
    pt, pl, pb, pr = ints(padding, 4, op, "padding")   # (top, left, bottom, right)
    oh = _out(op, h, pt, pb, kh, sh, dh)
    ow = _out(op, w, pl, pr, kw, sw, dw)
    padded = _pad_blocked(data, (pt, pl, pb, pr), f"{name}_pad")
    rc = _r.reduce_axis(wcb, name="rc")
    per_group = kb // groups
    ry = _r.reduce_axis(kh, name="ry")
    rx = _r.reduce_axis(kw, name="rx")
    ri = _r.reduce_axis(ci, name="ri")

    def body(nn, ko, y, x, kk):
        block = rc if groups == 1 else scaled(ko // per_group, wcb) + rc
        val = padded[nn, block, scaled(y, sh) + scaled(ry, dh), scaled(x, sw) + scaled(rx, dw), ri]
        return _r.sum(val * weight[ko, rc, ry, rx, ri, kk], axis=[rc, ry, rx, ri])

    return compute_named((n, kb, oh, ow, k), ["n", "ko", "y", "x", "k"], body, name)


def _pad_blocked(data: Tensor, pads: tuple, name: str) -> Tensor:
    """``data`` (N, C/c, H, W, c) with ``pads`` (top, left, bottom, right) of zeros around each
    map (``data`` itself when there are none)."""
    pt, pl, pb, pr = pads
    if not (pt or pl or pb or pr):
        return data
    n, cb, h, w, ci = data.shape

    def pad_body(nn, c, y, x, i):
        yy, xx = y - pt, x - pl
        inside = (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
        v = data[nn, c, _e.max(_e.min(yy, h - 1), 0), _e.max(_e.min(xx, w - 1), 0), i]
        return _e.select(inside, v, _e.const(0, data.dtype))

    return compute_named((n, cb, h + pt + pb, w + pl + pr, ci), ["n", "cb", "y", "x", "ci"],
                         pad_body, name)


def depthwise_nchwc(data: Tensor, weight: Tensor, stride=1, padding=(0, 0, 0, 0),
                    dilation=1, name: str = "depthwise_nchwc") -> Tensor:
    """Depthwise 2-D convolution in a blocked layout: data (N, C/c, H, W, c), weight
    (C/c, KH, KW, c) -> (N, C/c, OH, OW, c), each channel convolved with its own kernel::

        out[n, cb, y, x, i] = sum(pad(data)[n, cb, y*sh + ry*dh, x*sw + rx*dw, i]
                                  * weight[cb, ry, rx, i])

    The ``c`` channels of a pixel are one vector: a strided conv reads whole vectors too,
    where NCHW reads every other element of a row.
    """
    op = "depthwise_nchwc"
    check_tensor(data, op, "data")
    check_tensor(weight, op, "weight")
    if data.ndim != 5 or weight.ndim != 4 or (weight.shape[0], weight.shape[3]) != (
            data.shape[1], data.shape[4]):
        raise TEShapeError(f"{op}: data must be (N, C/c, H, W, c) and weight (C/c, KH, KW, c) "
                           f"with the same C/c and c; got {data.shape} and {weight.shape}")
    n, cb, h, w, c = data.shape
    _, kh, kw, _ = weight.shape
    sh, sw = pair(stride, op, "stride")
    dh, dw = pair(dilation, op, "dilation")
    pt, pl, pb, pr = ints(padding, 4, op, "padding")
    oh = _out(op, h, pt, pb, kh, sh, dh)
    ow = _out(op, w, pl, pr, kw, sw, dw)
    padded = _pad_blocked(data, (pt, pl, pb, pr), f"{name}_pad")
    ry = _r.reduce_axis(kh, name="ry")
    rx = _r.reduce_axis(kw, name="rx")

    def body(nn, b, y, x, i):
        val = padded[nn, b, scaled(y, sh) + scaled(ry, dh), scaled(x, sw) + scaled(rx, dw), i]
        return _r.sum(val * weight[b, ry, rx, i], axis=[ry, rx])

    return compute_named((n, cb, oh, ow, c), ["n", "b", "y", "x", "i"], body, name)
