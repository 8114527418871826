"""Winograd's minimal filtering: a 3x3 convolution with stride 1 in fewer multiplications.

A 2x2 tile of outputs of a 3x3 filter reads a 4x4 tile of inputs. Computed directly it
takes 2*2*3*3 = 36 products per input and output channel; F(2x2, 3x3) takes 16
(Lavin & Gray, 2015): transform the 4x4 input tile (``V = Bt d B``, additions only) and
the filter (``U = G g Gt``, once, at compile time), multiply them position by position,
summed over the input channels (16 independent matrix products, one per position of the
4x4 tile), and transform the 4x4 result back to the 2x2 outputs (``Y = At M A``,
additions only). The products are 2.25x fewer; the transforms cost additions and the
traffic of the 16 intermediate planes.

Three stages, each its own graph op (:mod:`mlcbook.ops.winograd`), in blocked channels
(NCHW[c]c, as :func:`~.layout.conv2d_nchwc`):

    >>> v = winograd_input(xb, padding=(1, 1, 1, 1))      # (16, N, C/c, TH, TW, c)
    >>> m = winograd_product(v, u)                       # (16, N, K/k, TH, TW, k)
    >>> y = winograd_output(m, (56, 56))                 # (N, K/k, 56, 56, k)

``u = winograd_weight(wb)`` (numpy) transforms blocked weights (K/k, C/c, 3, 3, c, k).
The transforms pick a matrix row by the tile position (``select`` on ``p // 4``, ``y % 2``,
...); their blocks carry :data:`~mlcbook.tir.UNROLLED_TILE`, so the default schedule
unrolls those positions and the selects fold to the few additions of each row.
"""

from __future__ import annotations

import numpy as np

from ...errors import TEShapeError
from ...tir import expr as _e
from ...tir.stmt import UNROLLED_TILE
from .. import reduction as _r
from ..tensor import Tensor
from .util import check_tensor, compute_named, ints

#: F(2x2, 3x3): input tile ALPHA x ALPHA, output tile M x M, filter R x R
ALPHA, M, R = 4, 2, 3
#: the transforms of Lavin & Gray for F(2, 3): V = BT d BT', U = G g G', Y = AT m AT'
BT = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
G = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]], dtype=np.float64)
AT = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)


def tiles(out: int) -> int:
    """How many M-wide tiles cover ``out`` outputs (the last one may stick out)."""
    return -(-out // M)


def winograd_weight(w: np.ndarray) -> np.ndarray:
    """Blocked 3x3 weights (K/k, C/c, 3, 3, c, k) -> ``U = G g Gt`` per tile position,
    (16, K/k, C/c, c, k), in ``w``'s dtype (computed in float64)."""
    if w.ndim != 6 or w.shape[2:4] != (R, R):
        raise TEShapeError(f"winograd_weight: weights must be (K/k, C/c, 3, 3, c, k), got "
                           f"{w.shape}")
    u = np.einsum("er,fs,abrsck->efabck", G, G, w.astype(np.float64))
    return np.ascontiguousarray(u.reshape(ALPHA * ALPHA, *u.shape[2:]).astype(w.dtype))


def _rows(matrix: np.ndarray, row, g) -> _e.PrimExpr:
    """``sum_i matrix[row, i] * g(i)`` for a symbolic ``row`` of a matrix of 0 and +-1 whose
    rows each have a +1 (F(2, 3)'s ``BT`` and ``AT``): a chain of selects, one arm per row,
    each the additions and subtractions of that row's terms."""
    def arm(r):
        plus = [g(i) for i, a in enumerate(matrix[r]) if a == 1]
        minus = [g(i) for i, a in enumerate(matrix[r]) if a == -1]
        out = plus[0]
        for v in plus[1:]:
            out = out + v
        for v in minus:
            out = out - v
        return out
    expr = arm(len(matrix) - 1)
    for r in range(len(matrix) - 2, -1, -1):
        expr = _e.select(row == r, arm(r), expr)
    return expr


def winograd_input(data: Tensor, padding=(1, 1, 1, 1), name: str = "winograd_input") -> Tensor:
    """(N, C/c, H, W, c) -> V (16, N, C/c, TH, TW, c): each 4x4 tile of the zero-padded
    input, ``Bt d B``; tile (ty, tx) starts at padded row 2ty and column 2tx, and the output
    of a 3x3 stride-1 conv with ``padding`` (top, left, bottom, right) is covered by
    TH x TW tiles."""
    op = "winograd_input"
    check_tensor(data, op, "data")
    if data.ndim != 5:
        raise TEShapeError(f"{op}: data must be (N, C/c, H, W, c), got {data.shape}")
    n, cb, h, w, c = data.shape
    pt, pl, pb, pr = ints(padding, 4, op, "padding")
    oh, ow = h + pt + pb - R + 1, w + pl + pr - R + 1
    if oh < 1 or ow < 1:
        raise TEShapeError(f"{op}: a 3x3 window does not fit in {h}x{w} + padding {padding}")
    th, tw = tiles(oh), tiles(ow)
    zero = _e.const(0.0, data.dtype)

    def d(nn, cb_, ty, tx, ci, i, j):
        y, x = ty * M + i - pt, tx * M + j - pl
        inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
        v = data[nn, cb_, _e.max(_e.min(y, h - 1), 0), _e.max(_e.min(x, w - 1), 0), ci]
        return _e.select(inside, v, zero)

    def body(p, nn, cb_, ty, tx, ci):
        return _rows(BT, p // ALPHA, lambda i: _rows(BT, p % ALPHA,
                                                     lambda j: d(nn, cb_, ty, tx, ci, i, j)))

    return compute_named((ALPHA * ALPHA, n, cb, th, tw, c), ["p", "n", "cb", "ty", "tx", "c"],
                         body, name, attrs={UNROLLED_TILE: ((0, ALPHA * ALPHA),)})


def winograd_product(v: Tensor, u: Tensor, name: str = "winograd_product") -> Tensor:
    """V (16, N, C/c, TH, TW, c) x U (16, K/k, C/c, c, k) -> M (16, N, K/k, TH, TW, k): at
    each tile position, the sum over input channels (a 1x1 convolution per position)."""
    op = "winograd_product"
    check_tensor(v, op, "v")
    check_tensor(u, op, "u")
    if v.ndim != 6 or u.ndim != 5 or (u.shape[0], u.shape[2], u.shape[3]) != (
            v.shape[0], v.shape[2], v.shape[5]):
        raise TEShapeError(f"{op}: v must be (16, N, C/c, TH, TW, c) and u (16, K/k, C/c, c, "
                           f"k) with the same 16, C/c and c; got {v.shape} and {u.shape}")
    p, n, cb, th, tw, c = v.shape
    _, kb, _, _, k = u.shape
    rc = _r.reduce_axis(cb, name="rc")
    ri = _r.reduce_axis(c, name="ri")

    def body(pp, nn, ko, ty, tx, kk):
        return _r.sum(v[pp, nn, rc, ty, tx, ri] * u[pp, ko, rc, ri, kk], axis=[rc, ri])

    return compute_named((p, n, kb, th, tw, k), ["p", "n", "ko", "ty", "tx", "k"], body, name)


def winograd_output(m: Tensor, out_hw, name: str = "winograd_output") -> Tensor:
    """M (16, N, K/k, TH, TW, k) -> (N, K/k, OH, OW, k): each 4x4 tile ``At m A``, its 2x2
    outputs placed at (2ty, 2tx); ``out_hw`` = (OH, OW) crops the tiles that stick out."""
    op = "winograd_output"
    check_tensor(m, op, "m")
    oh, ow = ints(out_hw, 2, op, "out_hw")
    if m.ndim != 6 or m.shape[0] != ALPHA * ALPHA or (tiles(oh), tiles(ow)) != m.shape[3:5]:
        raise TEShapeError(f"{op}: m must be (16, N, K/k, TH, TW, k) with TH x TW tiles of "
                           f"2x2 covering out_hw {(oh, ow)}, got {m.shape}")
    _, n, kb, _, _, k = m.shape

    def body(nn, ko, y, x, kk):
        return _rows(AT, y % M, lambda e: _rows(
            AT, x % M, lambda f: m[e * ALPHA + f, nn, ko, y // M, x // M, kk]))

    return compute_named((n, kb, oh, ow, k), ["n", "ko", "y", "x", "k"], body, name,
                         attrs={UNROLLED_TILE: ((2, M), (3, M))})
