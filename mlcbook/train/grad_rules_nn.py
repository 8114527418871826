"""Gradient rules of the neural-network ops, in graph ops: convolution (backward data is a
convolution of the stride-dilated gradient with the flipped, transposed weights; backward
weights a convolution of the input with the gradient), pooling (each kernel offset's strided
window, put back where it came from), normalizations and softmax; a transposed convolution
(the adjoint of a convolution), resize (each axis's linear map, transposed) and attention
(through the probabilities the op itself gives). The recurrent layers' rules are in
:mod:`mlcbook.train.grad_rules_recurrent`.

    >>> dx, dw, db = gradient_rule("conv")(conv_call, g)      # three graph expressions

Importing this module registers the rules.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import NoGradientError
from ..graph.expr import Call, Constant, Expr, TupleGetItem
from ..ops import get as get_op
from ..te.ops.attention import scale_root
from ..te.ops.resize import resized_axes
from .autodiff import register_gradient
from .graph_math import (as_float, broadcast_to, call, concat, dilate, pad_axis, reshape, scalar,
                         unbroadcast, unwindow, window)


def _spatial(c: Call, kernel) -> tuple:
    nsp = c.args[0].type.ndim - 2
    strides = tuple(c.attrs.get("strides") or (1,) * nsp)
    dilations = tuple(c.attrs.get("dilations") or (1,) * nsp)
    pads = tuple(c.attrs.get("pads") or (0,) * (2 * nsp))
    return nsp, strides, dilations, pads, tuple(kernel)


def _flip(w: Expr, axes) -> Expr:
    n = [w.shape[a] for a in axes]
    return call("slice", w, starts=tuple(k - 1 for k in n), ends=tuple(-k - 1 for k in n),
                axes=tuple(axes), steps=(-1,) * len(axes))


def _conv_data_grad(c: Call, g: Expr) -> Expr:
    x, w = c.args[:2]
    nsp, s, d, pads, k = _spatial(c, w.shape[2:])
    group = c.attrs["group"]
    m, cg = w.shape[0], w.shape[1]
    sp = 2 + np.arange(nsp)
    wt = reshape(w, (group, m // group, cg) + k)
    wt = call("transpose", wt, perm=(0, 2, 1) + tuple(range(3, 3 + nsp)))
    wt = _flip(reshape(wt, (group * cg, m // group) + k), tuple(int(a) for a in sp))
    gd = g
    for i in range(nsp):
        gd = pad_axis(dilate(gd, 2 + i, s[i]), 2 + i, 0, -(s[i] - 1))
    conv_pads, crops = [0] * (2 * nsp), []
    for i in range(nsp):
        span = d[i] * (k[i] - 1)
        full = x.shape[2 + i] + pads[i] + pads[nsp + i]
        extra = full - (gd.shape[2 + i] + span)      # rows no window reached: gradient 0
        lo, hi = span - pads[i], span + extra - pads[nsp + i]
        conv_pads[i], conv_pads[nsp + i] = max(lo, 0), max(hi, 0)
        crops.append((min(lo, 0), min(hi, 0)))
    dx = call("conv", gd, wt, pads=tuple(conv_pads), dilations=d, group=group)
    for i, (lo, hi) in enumerate(crops):
        dx = pad_axis(dx, 2 + i, lo, hi)
    return dx


def _im2col_rows(xt: Expr, k, s, d, out) -> Expr:
    """The windows of ``xt`` (C, N, *spatial): the input with its channels first) as a
    (C * prod(k), N * prod(out)) matrix, rows in (channel, kernel offset) order: each kernel
    offset's window, stacked after the channel axis. With the channels first, a row is
    one offset's window over the whole batch, contiguous: no transpose of the (much
    larger) windows is needed, only of the input."""
    c, n = xt.shape[:2]
    kk, oo = math.prod(k), math.prod(out)
    wins = [reshape(window(xt, o, s, out), (c, 1, n) + tuple(out)) for o in _offsets(k, d)]
    return reshape(concat(wins, axis=1), (c * kk, n * oo))


def _conv_weight_grad(c: Call, g: Expr) -> Expr:
    """``dW[m, c, k] = sum_{n, o} g[n, m, o] * xp[n, c, o * s + k * d]``: per group, one gemm
    ``dW^T = windows (C k, N o) @ g (N o, M)`` of the input's windows (an im2col of the
    input with its channels first) with the gradient, channels last."""
    x, w = c.args[:2]
    nsp, s, d, pads, k = _spatial(c, w.shape[2:])
    group = c.attrs["group"]
    xt = call("transpose", x, perm=(1, 0) + tuple(range(2, 2 + nsp)))
    if any(pads):
        xt = call("pad", xt, pads=(0, 0) + pads[:nsp] + (0, 0) + pads[nsp:])
    out = g.shape[2:]
    cg, mg = x.shape[1] // group, w.shape[0] // group
    rows = g.shape[0] * math.prod(out)
    gl = reshape(call("transpose", g, perm=(0,) + tuple(range(2, 2 + nsp)) + (1,)),
                 (rows, w.shape[0]))
    parts = []
    for j in range(group):
        xj, gj = xt, gl
        if group > 1:
            xj = call("slice", xt, starts=(j * cg,), ends=((j + 1) * cg,), axes=(0,))
            gj = call("slice", gl, starts=(j * mg,), ends=((j + 1) * mg,), axes=(1,))
        dwt = call("gemm", _im2col_rows(xj, k, s, d, out), gj)
        parts.append(reshape(call("transpose", dwt, perm=(1, 0)), (mg, cg) + k))
    return concat(parts, axis=0)


@register_gradient("conv")
def conv_gradients(c, g):
    """Gradients of a conv call ``c`` (data, weight, and bias if it has one) given the
    gradient ``g`` of its output."""
    out = [_conv_data_grad(c, g), _conv_weight_grad(c, g)]
    if len(c.args) == 3:
        out.append(call("sum", g, axes=(0,) + tuple(range(2, c.type.ndim)), keepdims=0))
    return tuple(out)


@register_gradient("conv_transpose")
def _conv_transpose(c, g):
    """A transposed convolution is the adjoint of the convolution with its weights and
    geometry: ``dx = conv(g, w)`` (its pads take back the crop; output_padding's extra rows
    are cropped off) and ``dw`` is that convolution's weight gradient for the output
    gradient ``x``."""
    x, w = c.args[:2]
    nsp, s, d, pads, _ = _spatial(c, w.shape[2:])
    # a constant (frozen) weight goes to the conv unnamed: the compiler re-lays a conv's
    # constant weight into blocks under its name, which would give the function two
    # different weights of one name (the forward conv_transpose keeps the original)
    wc = Constant(w.data) if isinstance(w, Constant) and w.name else w
    conv = call("conv", g, wc, strides=s, dilations=d, pads=pads, group=c.attrs["group"])
    dx = conv
    for i in range(nsp):
        dx = pad_axis(dx, 2 + i, 0, x.shape[2 + i] - conv.shape[2 + i])
    out = [dx, _conv_weight_grad(conv, x)]
    if len(c.args) == 3:
        out.append(call("sum", g, axes=(0,) + tuple(range(2, c.type.ndim)), keepdims=0))
    return tuple(out)


def _resize_matrix(c: Call, axis: int) -> np.ndarray:
    """The (output, input) matrix resize applies along ``axis``: the op's own reference run on
    the identity, with that axis's attributes on the identity's second axis (resize is
    separable, and linear in x in every mode; a point tf_crop_and_resize extrapolates has
    a zero row: its value depends on no input)."""
    a, n = c.attrs, c.args[0].shape[axis]
    roi = a["roi"] or ((0.0, 1.0),) * c.type.ndim
    attrs = dict(a, sizes=(n, a["sizes"][axis]), scales=(1.0, a["scales"][axis]),
                 roi=((0.0, 1.0), tuple(roi[axis])), extrapolation_value=0.0)
    return get_op("resize").reference(np.eye(n), **attrs).T


@register_gradient("resize")
def _resize(c, g):
    x, a = c.args[0], c.attrs
    roi = tuple(tuple(r) for r in a["roi"]) or ((0.0, 1.0),) * x.type.ndim
    nd = x.type.ndim
    for axis in resized_axes(x.shape, a["sizes"], a["scales"],
                             a["coordinate_transformation_mode"], roi):
        # contract g's axis with the matrix: moved last, times the matrix, moved back
        perm = tuple(i for i in range(nd) if i != axis) + (axis,)
        back = tuple(int(i) for i in np.argsort(perm))
        moved = call("transpose", g, perm=perm) if axis != nd - 1 else g
        m = Constant(_resize_matrix(c, axis).astype(x.dtype))
        g = call("matmul", moved, m)
        g = call("transpose", g, perm=back) if axis != nd - 1 else g
    return (g,)


def _attention_output(c: Call, mode: int) -> Expr:
    """The attention call's scores (``mode`` 0) or probabilities (3), from the same inputs:
    the op applies every mask, so the rule never rebuilds them."""
    attrs = dict(c.attrs, num_outputs=2, qk_matmul_output_mode=mode)
    return TupleGetItem(call("attention", *c.args, **attrs), 1)


def _heads(kv: Expr, rep: int) -> Expr:
    """(B, Hkv, T, D) -> (B, Hkv * rep, T, D), each head repeated ``rep`` times in place."""
    if rep == 1:
        return kv
    b, h, t, d = kv.shape
    wide = broadcast_to(reshape(kv, (b, h, 1, t, d)), (b, h, rep, t, d))
    return reshape(wide, (b, h * rep, t, d))


def _heads_back(g: Expr, rep: int) -> Expr:
    """The adjoint of :func:`_heads`: the repeated heads' gradients summed."""
    if rep == 1:
        return g
    b, h, t, d = g.shape
    return call("sum", reshape(g, (b, h // rep, rep, t, d)), axes=(2,), keepdims=0)


@register_gradient("attention")
def _attention(c, g):
    """With p the probabilities (every mask applied, fully masked rows 0): ``dv = p^T g``,
    ``dp = g v^T``, the softmax's ``dz = p (dp - sum(dp p))``, through softcap's tanh, then
    ``dq = scale dz k`` and ``dk = scale dz^T q``; an additive mask gets ``dz``."""
    a = c.attrs
    gy, gextra = (g[0], g[1]) if isinstance(g, tuple) else (g, None)
    q, k, v = c.args[:3]
    rep, dt = q.shape[1] // k.shape[1], q.dtype
    kr, vr = _heads(k, rep), _heads(v, rep)
    swap = (0, 1, 3, 2)
    extra = {0: "scores", 1: "scores", 2: "biased", 3: "probs"}.get(
        a["qk_matmul_output_mode"]) if gextra is not None else None
    p = _attention_output(c, 3)
    gy = gy if gy is not None else Constant(np.zeros(c.type.fields[0].shape, dt))
    dp = call("matmul", gy, call("transpose", vr, perm=swap))
    if extra == "probs":
        dp = call("add", dp, gextra)
    dz = call("mul", p, call("sub", dp, call("sum", call("mul", dp, p), axes=(3,), keepdims=1)))
    if extra == "biased":
        dz = call("add", dz, gextra)
    ds = call("add", dz, gextra) if extra == "scores" else dz
    if a["softcap"] > 0:
        t = call("div", _attention_output(c, 0), scalar(a["softcap"], dt))
        ds = call("mul", ds, call("sub", scalar(1.0, dt), call("mul", t, t)))
    scale = scalar(scale_root(a.get("scale"), q.shape[3], dt) ** 2, dt)
    dq = call("mul", call("matmul", ds, kr), scale)
    dk = _heads_back(call("mul", call("matmul", call("transpose", ds, perm=swap), q), scale), rep)
    dv = _heads_back(call("matmul", call("transpose", p, perm=swap), gy), rep)
    rest = [None] * (len(c.args) - 3)
    if a["has_mask"] and len(c.args) > 3 and c.args[3].dtype == dt:
        mask = c.args[3]
        keys = call("slice", dz, starts=(0,), ends=(mask.shape[-1],), axes=(3,))
        rest[0] = unbroadcast(keys, mask.shape)
    return (dq, dk, dv, *rest)


@register_gradient("affine_grid")
def _affine_grid(c, g):
    """``grid[n, pos, j] = sum_k base[pos, k] theta[n, j, k]`` with ``base`` the homogeneous
    positions (x, y[, z], 1), which the op's own reference gives for unit thetas; so
    ``dtheta[n] = g[n]^T base``."""
    theta, size = c.args[0], tuple(c.attrs["size"])
    r = theta.shape[1]
    unit = np.zeros((r + 1, r, r + 1))
    unit[np.arange(r + 1), 0, np.arange(r + 1)] = 1.0     # unit k: output j=0 reads base k
    base = get_op("affine_grid").reference(unit, size=(r + 1,) + size[1:],
                                           align_corners=c.attrs["align_corners"])[..., 0]
    points = math.prod(size[2:])
    base = Constant(base.reshape(r + 1, points).T.astype(theta.dtype))
    gm = call("transpose", reshape(g, (size[0], points, r)), perm=(0, 2, 1))
    return (call("matmul", gm, base),)


def _pool_geometry(c: Call):
    x = c.args[0]
    nsp, s, d, pads, k = _spatial(c, c.attrs["kernel_shape"])
    out = c.shape[2:]
    extra = [max(0, (out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1
                 - x.shape[2 + i] - pads[i] - pads[nsp + i]) for i in range(nsp)]
    widths = [(pads[i], pads[nsp + i] + extra[i]) for i in range(nsp)]
    return nsp, s, d, k, out, widths


def _unpad(dxp: Expr, widths) -> Expr:
    for i, (lo, hi) in enumerate(widths):
        dxp = pad_axis(dxp, 2 + i, -lo, -hi)
    return dxp


def _offsets(k, d):
    return [tuple(o * di for o, di in zip(off, d)) for off in itertools.product(*map(range, k))]


@register_gradient("max_pool")
def _max_pool(c, g):
    x = c.args[0]
    nsp, s, d, k, out, widths = _pool_geometry(c)
    pads = tuple(w[0] for w in widths) + tuple(w[1] for w in widths)
    low = float(np.finfo(x.dtype).min)
    xp = call("pad", x, pads=(0, 0) + pads[:nsp] + (0, 0) + pads[nsp:], value=low) \
        if any(pads) else x
    offs = _offsets(k, d)
    hits = [as_float(call("equal", window(xp, o, s, out), c), x.dtype) for o in offs]
    count = hits[0]
    for h in hits[1:]:
        count = call("add", count, h)
    share = call("div", g, count)            # ties in one window share its gradient
    sizes = xp.shape[2:]
    dxp = None
    for o, h in zip(offs, hits):
        part = unwindow(call("mul", h, share), o, s, sizes)
        dxp = part if dxp is None else call("add", dxp, part)
    return (_unpad(dxp, widths),)


@register_gradient("avg_pool")
def _avg_pool(c, g):
    x = c.args[0]
    nsp, s, d, k, out, widths = _pool_geometry(c)
    pads = tuple(c.attrs.get("pads") or (0,) * (2 * nsp))
    if c.attrs["count_include_pad"]:   # explicit padding counts, ceil_mode's extra does not
        inner = [x.shape[2 + i] + pads[i] + pads[nsp + i] for i in range(nsp)]
        counted = np.pad(np.ones(inner), [(0, hi - pads[nsp + i])
                                          for i, (_, hi) in enumerate(widths)])
    else:
        counted = np.pad(np.ones(x.shape[2:]), widths)
    offs = _offsets(k, d)
    count = sum(counted[tuple(slice(o, o + si * (n - 1) + 1, si)
                              for o, si, n in zip(off, s, out))] for off in offs)
    share = call("mul", g, Constant((1 / count).astype(x.dtype)))
    sizes = tuple(x.shape[2 + i] + a + b for i, (a, b) in enumerate(widths))
    dxp = None
    for o in offs:
        part = unwindow(share, o, s, sizes)
        dxp = part if dxp is None else call("add", dxp, part)
    return (_unpad(dxp, widths),)


@register_gradient("global_avg_pool")
def _global_avg_pool(c, g):
    x = c.args[0]
    n = math.prod(x.shape[2:])
    return (broadcast_to(call("mul", g, scalar(1 / n, x.dtype)), x.shape),)


@register_gradient("softmax")
def _softmax(c, g):
    dot = call("sum", call("mul", g, c), axes=(c.attrs["axis"],), keepdims=1)
    return (call("mul", c, call("sub", g, dot)),)


@register_gradient("log_softmax")
def _log_softmax(c, g):
    total = call("sum", g, axes=(c.attrs["axis"],), keepdims=1)
    return (call("sub", g, call("mul", call("exp", c), total)),)


@register_gradient("batch_norm")
def _batch_norm(c, g):
    x, scale, _bias, mean, var = c.args
    shape = (1, x.shape[1]) + (1,) * (x.type.ndim - 2)
    axes = (0,) + tuple(range(2, x.type.ndim))
    inv = call("reciprocal", call("sqrt", call("add", var, scalar(c.attrs["epsilon"], x.dtype))))
    xc = call("sub", x, reshape(mean, shape))
    dx = call("mul", g, reshape(call("mul", scale, inv), shape))
    gsum = call("sum", g, axes=axes, keepdims=0)
    gxc = call("sum", call("mul", g, xc), axes=axes, keepdims=0)
    dscale = call("mul", gxc, inv)
    dmean = call("neg", call("mul", gsum, call("mul", scale, inv)))
    inv3 = call("mul", inv, call("mul", inv, inv))
    dvar = call("mul", call("mul", gxc, scale), call("mul", inv3, scalar(-0.5, x.dtype)))
    return dx, dscale, gsum, dmean, dvar


@register_gradient("layer_norm")
def _layer_norm(c, g):
    if isinstance(g, tuple):
        if any(gi is not None for gi in g[1:]):
            raise NoGradientError(
                f"grad: the loss depends on the mean or 1/std output of layer_norm "
                f"{c.name!r}; only its first output has a gradient rule")
        g = g[0]
    x, scale = c.args[:2]
    axis = c.attrs["axis"] % x.type.ndim
    red = tuple(range(axis, x.type.ndim))
    mean = call("mean", x, axes=red, keepdims=1)
    xc = call("sub", x, mean)
    var = call("mean", call("mul", xc, xc), axes=red, keepdims=1)
    inv = call("reciprocal", call("sqrt", call("add", var, scalar(c.attrs["epsilon"], x.dtype))))
    xhat = call("mul", xc, inv)
    gx = call("mul", g, scale)
    m1 = call("mean", gx, axes=red, keepdims=1)
    m2 = call("mean", call("mul", gx, xhat), axes=red, keepdims=1)
    dx = call("mul", inv, call("sub", call("sub", gx, m1), call("mul", xhat, m2)))
    out = [dx, unbroadcast(call("mul", g, xhat), scale.shape)]
    if len(c.args) == 3:
        out.append(unbroadcast(g, c.args[2].shape))
    return tuple(out)


# --- rotary embedding ------------------------------------------------------------------------
def _halves(v: Expr, c: Call) -> tuple[Expr, Expr]:
    """The two halves of the rotated part of ``v`` (B, H, S, D): the pairs' first and second
    elements (every other one when interleaved)."""
    r = c.attrs["rotary_embedding_dim"] or v.shape[3]
    if c.attrs["interleaved"]:
        return tuple(call("slice", v, starts=(k,), ends=(r,), axes=(3,), steps=(2,))
                     for k in (0, 1))
    return tuple(call("slice", v, starts=(k * r // 2,), ends=((k + 1) * r // 2,), axes=(3,))
                 for k in (0, 1))


@register_gradient("rotary_embedding")
def _rotary_embedding(c, g):
    # each pair (a, b) turns by an angle: (cos a - sin b, sin a + cos b); the gradient of x
    # turns g back (sin negated), those of cos and sin sum the pairs' products over heads
    x, cos, sin = c.args
    gx = call("rotary_embedding", g, cos, call("neg", sin), **c.attrs)
    (a, b), (ga, gb) = _halves(x, c), _halves(g, c)
    gcos = call("add", call("mul", ga, a), call("mul", gb, b))
    gsin = call("sub", call("mul", gb, a), call("mul", ga, b))
    return gx, *(call("sum", v, axes=(1,), keepdims=0) for v in (gcos, gsin))


__all__: list[str] = []


def _channel_window_sum(z: Expr, before: int, after: int) -> Expr:
    """``out[:, c] = sum(z[:, c - before : c + after + 1])`` (channels outside count 0)."""
    channels = z.shape[1]
    padded = pad_axis(z, 1, before, after)
    total = None
    for k in range(before + after + 1):
        part = call("slice", padded, starts=(k,), ends=(k + channels,), axes=(1,))
        total = part if total is None else call("add", total, part)
    return total


@register_gradient("lrn")
def _lrn(c, g):
    # y = x * d**-beta with d = bias + alpha/size * (window sum of x**2 over [c-lo, c+hi]);
    # dx_j = g_j d_j**-beta - 2 alpha beta / size * x_j * sum over the windows that hold j
    # (channels [j-hi, j+lo]) of g * x * d**(-beta-1)
    x = c.args[0]
    size, alpha, beta, bias = (c.attrs["size"], c.attrs["alpha"], c.attrs["beta"],
                               c.attrs["bias"])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    dt = x.dtype
    d = call("add", call("mul", _channel_window_sum(call("mul", x, x), lo, hi),
                         scalar(alpha / size, dt)), scalar(bias, dt))
    direct = call("mul", g, call("pow", d, scalar(-beta, dt)))
    inner = call("mul", call("mul", g, x), call("pow", d, scalar(-beta - 1, dt)))
    spread = call("mul", call("mul", x, _channel_window_sum(inner, hi, lo)),
                  scalar(-2 * alpha * beta / size, dt))
    return (call("add", direct, spread),)

