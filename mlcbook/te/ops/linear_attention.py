"""Linear attention (ONNX's ``LinearAttention``): attention whose memory is a recurrent state
``S`` of shape (d_k, d_v) per key/value head instead of a softmax over the past keys.

    >>> y, state = linear_attention(q, k, v, decay=g, beta=b, q_num_heads=4, kv_num_heads=2)

``q`` (B, T, Hq*d_k), ``k`` (B, T, Hkv*d_k), ``v`` (B, T, Hkv*d_v) hold the heads side by
side; ``past_state`` (B, Hkv, d_k, d_v) is the state before step 0 (zero if left out), the
log-space ``decay`` g is (B, T, Hkv*d_k) or one per head (B, T, Hkv), the update rate
``beta`` (B, T, Hkv) or (B, T, 1). Each step ``t``, with D = exp(g_t) scaling the rows of S::

    linear       S_t = S + k_t v_t^T
    gated        S_t = D S + k_t v_t^T
    delta        S_t = S + k_t u_t^T,     u_t = beta_t (v_t - S^T k_t)
    gated_delta  S_t = D S + k_t u_t^T,   u_t = beta_t (v_t - (D S)^T k_t)
    o_t = scale * S_t^T q_t               (scale defaults to 1 / sqrt(d_k))

Query head ``h`` reads the state of key/value head ``h // (Hq // Hkv)``. The outputs are
``o`` (B, T, Hq*d_v) in q's dtype and the last state, in past_state's dtype (q's without it).

How it is computed: not step by step (a sequence of T steps would be T stages), but in
closed form, in float32. With C_t the running sum of g, the state is
``S_t = e^{C_t} S_0 + sum_{s<=t} e^{C_t - C_s} k_s u_s^T`` (rows scaled per key feature), so
each output and the last state are sums over the steps (``u = v`` without the delta rule).
The delta rule's ``u`` solves the unit lower-triangular system ``(I + L) u = w`` with
``L[t, s] = beta_t k_t^T e^{C_t - C_s} k_s`` (s < t) and ``w_t = beta_t (v_t - k_t^T
e^{C_t} S_0)``; ``(I + L)^-1`` is built by doubling its diagonal blocks, ceil(log2 T) levels
of two stages each, the block inverse ``[[A, 0], [C, D]]^-1 = [[A^-1, 0], [-D^-1 C A^-1,
D^-1]]``.
"""

from __future__ import annotations

import math

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import check_tensor, clamp, compute_named, load, store

#: the update rules, and which take a decay and a beta
RULES = ("linear", "gated", "delta", "gated_delta")
FLOAT_DTYPES = ("float16", "bfloat16", "float32")


def gated(rule: str) -> bool:
    return rule in ("gated", "gated_delta")


def delta(rule: str) -> bool:
    return rule in ("delta", "gated_delta")


class _Dims:
    """The checked sizes of one call: batch, steps, heads, feature sizes, group size."""

    def __init__(self, query, key, value, past_state, decay, beta, hq, hkv, rule):
        op = "linear_attention"
        if rule not in RULES:
            raise TEAttributeError(f"{op}: update_rule={rule!r} is not one of "
                                   f"{', '.join(RULES)}")
        for arg, n in (("q_num_heads", hq), ("kv_num_heads", hkv)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise TEAttributeError(f"{op}: {arg}={n!r}; Instead: give a positive int, the "
                                       "number of heads packed in the last axis")
        if hq % hkv:
            raise TEAttributeError(f"{op}: q_num_heads={hq} is not a multiple of "
                                   f"kv_num_heads={hkv}; Instead: give a kv_num_heads that "
                                   "divides q_num_heads (each key/value head serves a group)")
        for arg, x in (("query", query), ("key", key), ("value", value)):
            check_tensor(x, op, arg)
            if x.ndim != 3:
                raise TEShapeError(f"{op}: {arg} has shape {x.shape}; Instead: give it 3-D, "
                                   "(batch, steps, heads * head size)")
            if x.dtype != query.dtype or x.dtype not in FLOAT_DTYPES:
                raise TEDTypeError(f"{op}: {arg} is {x.dtype}; query, key and value must "
                                   f"share one dtype of {', '.join(FLOAT_DTYPES)}")
        self.b, self.t = query.shape[:2]
        self.hq, self.hkv, self.group = hq, hkv, hq // hkv
        for arg, x, heads in (("query", query, hq), ("key", key, hkv), ("value", value, hkv)):
            if x.shape[:2] != (self.b, self.t) or x.shape[2] % heads:
                raise TEShapeError(f"{op}: {arg} has shape {x.shape}; with query {query.shape} "
                                   f"Instead: give ({self.b}, {self.t}, {heads} * head size), "
                                   f"its {heads} heads side by side")
        self.dk, self.dv = query.shape[2] // hq, value.shape[2] // hkv
        if key.shape[2] != hkv * self.dk:
            raise TEShapeError(f"{op}: key has shape {key.shape}; its last axis must be "
                               f"kv_num_heads * d_k = {hkv * self.dk} (d_k = {self.dk}, from "
                               "the query); Instead: give keys of the queries' head size")
        want = (self.b, self.t)
        self.decay_width = self._rate(decay, "decay", gated(rule), rule, want,
                                      (hkv * self.dk, hkv), self.dk)
        self.beta_heads = self._rate(beta, "beta", delta(rule), rule, want, (hkv, 1), hkv)
        if past_state is not None:
            check_tensor(past_state, op, "past_state")
            shape = (self.b, hkv, self.dk, self.dv)
            if past_state.shape != shape or past_state.dtype not in FLOAT_DTYPES:
                raise TEShapeError(f"{op}: past_state is {past_state.shape} {past_state.dtype};"
                                   f" Instead: give {shape} (batch, kv heads, d_k, d_v) of a "
                                   "float dtype")

    def kv_head(self, h):
        """The key/value head query head ``h`` reads."""
        return h if self.group == 1 else h // self.group

    @staticmethod
    def _rate(x, arg, needed, rule, want, lasts, per):
        """Check the decay or beta input; its width: ``per`` if its last axis is
        ``lasts[0]`` long, else 1 (decay: d_k values per head, or 1; beta: one per head, or
        one for all)."""
        op = "linear_attention"
        if (x is not None) != needed:
            raise TEShapeError(f"{op}: update_rule={rule!r} {'needs' if needed else 'takes no'} "
                               f"{arg} input; Instead: {'give' if needed else 'leave out'} "
                               f"{arg}, or choose another update_rule")
        if x is None:
            return 0
        check_tensor(x, op, arg)
        if x.ndim != 3 or x.shape[:2] != want or x.shape[2] not in lasts:
            raise TEShapeError(f"{op}: {arg} has shape {x.shape}; Instead: give "
                               f"({want[0]}, {want[1]}, n) with n one of {lasts}")
        return per if x.shape[2] == lasts[0] else 1


def linear_attention(query: Tensor, key: Tensor, value: Tensor, past_state: Tensor | None = None,
                     decay: Tensor | None = None, beta: Tensor | None = None, *,
                     q_num_heads: int, kv_num_heads: int, update_rule: str = "gated_delta",
                     scale: float = 0.0, name: str = "linear_attention") -> tuple:
    """``(output, present_state)`` of linear attention (see the module)."""
    n = _Dims(query, key, value, past_state, decay, beta, q_num_heads, kv_num_heads,
              update_rule)
    f32 = "float32"
    zero = _e.const(0.0, f32)
    scale = 1 / math.sqrt(n.dk) if not scale else scale

    def k_at(b, h, t, d):
        return _e.cast(f32, load(key, (b, t, h * n.dk + d)))

    if decay is not None:
        # C_t, the running sum of the log decay: (B, Hkv, T, d_k or 1)
        r = _r.reduce_axis(n.t, name="r")
        cum = compute_named((n.b, n.hkv, n.t, n.decay_width), ["b", "h", "t", "d"],
                            lambda b, h, t, d: _r.sum(_e.cast(f32, load(
                                decay, (b, r, h * n.decay_width + d))), axis=r, where=r <= t),
                            f"{name}_cum")

    def grow(b, h, t, d, since=None):
        """e^{C_t - C_since} of key feature d (e^{C_t} with no ``since``), or None: no decay."""
        if decay is None:
            return None
        d = d if n.decay_width > 1 else 0
        return _e.exp(cum[b, h, t, d] - (zero if since is None else cum[b, h, since, d]))

    def times(value, factor):
        return value if factor is None else value * factor

    def state0(b, h, d, m):
        return _e.cast(f32, load(past_state, (b, h, d, m)))

    def over_past(x, heads, nm):
        """x_t^T e^{C_t} S_0 for x = q (its heads) or k: (B, heads, T, d_v), or None."""
        if past_state is None:
            return None
        d, kv = _r.reduce_axis(n.dk, name="d"), n.kv_head if heads == n.hq else (lambda h: h)
        return compute_named((n.b, heads, n.t, n.dv), ["b", "h", "t", "m"], lambda b, h, t, m: (
            _r.sum(times(_e.cast(f32, load(x, (b, t, h * n.dk + d))) * state0(b, kv(h), d, m),
                         grow(b, kv(h), t, d)), axis=d)), f"{name}_{nm}")

    def pairs(x, heads, strict, nm):
        """x_t^T e^{C_t - C_s} k_s for s < t (``strict``) or s <= t, else 0: (B, heads, T, T)."""
        d, kv = _r.reduce_axis(n.dk, name="d"), n.kv_head if heads == n.hq else (lambda h: h)
        return compute_named((n.b, heads, n.t, n.t), ["b", "h", "t", "s"], lambda b, h, t, s: (
            _r.sum(times(_e.cast(f32, load(x, (b, t, h * n.dk + d))) * k_at(b, kv(h), s, d),
                         grow(b, kv(h), t, d, s)), axis=d,
                   where=s < t if strict else s <= t)), f"{name}_{nm}")

    def v_at(b, h, t, m):
        return _e.cast(f32, load(value, (b, t, h * n.dv + m)))

    u = v_at
    if beta is not None:
        u = _delta_updates(n, pairs(key, n.hkv, True, "kk"), over_past(key, n.hkv, "kS"),
                           lambda b, h, t: _e.cast(f32, load(beta, (
                               b, t, h if n.beta_heads > 1 else 0))), v_at, name)

    # the output: scale * (q_t^T e^{C_t} S_0 + sum_{s<=t} (q_t^T e^{C_t - C_s} k_s) u_s)
    qk, q0 = pairs(query, n.hq, False, "qk"), over_past(query, n.hq, "qS")
    s = _r.reduce_axis(n.t, name="s")
    qku = compute_named((n.b, n.t, n.hq, n.dv), ["b", "t", "h", "m"], lambda b, t, h, m: _r.sum(
        qk[b, h, t, s] * u(b, n.kv_head(h), s, m), axis=s, where=s <= t), f"{name}_qku")

    def out(b, t, j):
        h, m = j // n.dv, j % n.dv
        acc = qku[b, t, h, m] + (zero if q0 is None else q0[b, h, t, m])
        return store(acc * _e.const(scale, f32), query.dtype)
    output = compute_named((n.b, n.t, n.hq * n.dv), ["b", "t", "j"], out, name)

    # the last state: e^{C_T} S_0 + sum_s e^{C_T - C_s} k_s u_s^T
    last = n.t - 1
    s = _r.reduce_axis(n.t, name="s")
    ku = compute_named((n.b, n.hkv, n.dk, n.dv), ["b", "h", "d", "m"], lambda b, h, d, m: _r.sum(
        times(k_at(b, h, s, d) * u(b, h, s, m), grow(b, h, last, d, s)), axis=s), f"{name}_ku")

    def state(b, h, d, m):
        acc = ku[b, h, d, m]
        if past_state is not None:
            acc = acc + times(state0(b, h, d, m), grow(b, h, last, d))
        return store(acc, (past_state if past_state is not None else query).dtype)
    present = compute_named(ku.shape, ["b", "h", "d", "m"], state, f"{name}_state")
    return output, present


def _delta_updates(n: _Dims, kk: Tensor, ks0: Tensor | None, beta_at, v_at, name: str):
    """The delta rule's writes ``u`` (a function of (b, h, t, m)): the solution of ``(I + L) u
    = w`` (see the module), with ``kk`` holding k_t^T e^{C_t - C_s} k_s for s < t and ``ks0``
    k_t^T e^{C_t} S_0 (None: no past state)."""
    f32 = "float32"
    one, zero = _e.const(1.0, f32), _e.const(0.0, f32)
    idx4 = ["b", "h", "t", "s"]

    def lower(b, h, t, s):
        return beta_at(b, h, t) * kk[b, h, t, s]

    def inverse(b, h, t, s):        # the inverse of the 1 x 1 blocks: the identity
        return _e.select(t == s, one, zero)
    width, level = 1, 0
    while width < n.t:
        # Y = X L, X the inverse of the diagonal blocks of ``width`` (lower triangular)
        if width == 1:
            y = lower
        else:
            i = _r.reduce_axis(width, name="i")
            def xl(b, h, t, s, x=inverse, w=width):
                p = (t // w) * w + i        # (past the end in a last, partial block)
                return _r.sum(x(b, h, t, clamp(p, n.t)) * lower(b, h, clamp(p, n.t), s), axis=i,
                              where=p < n.t)
            y_t = compute_named((n.b, n.hkv, n.t, n.t), idx4, xl, f"{name}_xl{level}")
            y = (lambda b, h, t, s, y_t=y_t: y_t[b, h, t, s])
        # blocks of twice the width: the diagonal ones kept, below them -Y X
        i = _r.reduce_axis(width, name="i")

        def merged(b, h, t, s, x=inverse, y=y, w=width):
            r = (s // w) * w + i
            same = t // w == s // w
            coef = _e.select(same, _e.select(t == r, one, zero), zero - y(b, h, t, clamp(r, n.t)))
            return _r.sum(coef * x(b, h, clamp(r, n.t), s), axis=i,
                          where=(r < n.t) & (t // (2 * w) == s // (2 * w)) & (t >= s))
        x_t = compute_named((n.b, n.hkv, n.t, n.t), idx4, merged, f"{name}_inv{level}")
        inverse = (lambda b, h, t, s, x_t=x_t: x_t[b, h, t, s])
        width, level = 2 * width, level + 1

    def w_at(b, h, t, m):
        v = v_at(b, h, t, m)
        return beta_at(b, h, t) * (v if ks0 is None else v - ks0[b, h, t, m])
    s = _r.reduce_axis(n.t, name="s")
    u = compute_named((n.b, n.hkv, n.t, n.dv), ["b", "h", "t", "m"], lambda b, h, t, m: _r.sum(
        inverse(b, h, t, s) * w_at(b, h, s, m), axis=s, where=s <= t), f"{name}_u")
    return lambda b, h, t, m: u[b, h, t, m]


__all__ = ["linear_attention", "RULES", "gated", "delta"]
