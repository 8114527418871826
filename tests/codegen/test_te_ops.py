"""Every operator of ``mb.te.ops`` compiled to native code and checked against numpy
(float64 references of the same float32 inputs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import te
from mlcbook.te import ops

RNG = np.random.default_rng(6)
EXACT = dict(rtol=0, atol=0)
ROUNDED = dict(rtol=2e-6, atol=1e-7)
SUMS = dict(rtol=2e-5, atol=2e-6)


def randn(*shape):
    return RNG.standard_normal(shape).astype("float32")


def positive(*shape):
    return RNG.uniform(0.25, 3.0, shape).astype("float32")


def compiled(inputs, out, arrays):
    kernel = mb.build(te.create_prim_func([*inputs, out]))
    return kernel(*arrays)


def check(got, expected, tol):
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got.astype("float64"), expected, **tol)


UNARY = {
    "exp": (np.exp, randn, ROUNDED), "log": (np.log, positive, ROUNDED),
    "sqrt": (np.sqrt, positive, ROUNDED), "rsqrt": (lambda v: 1 / np.sqrt(v), positive, ROUNDED),
    "tanh": (np.tanh, randn, ROUNDED), "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), randn, ROUNDED),
    "erf": (np.vectorize(math.erf), randn, ROUNDED), "negative": (np.negative, randn, EXACT),
    "abs": (np.abs, randn, EXACT), "floor": (np.floor, lambda *s: randn(*s) * 4, EXACT),
    "ceil": (np.ceil, lambda *s: randn(*s) * 4, EXACT), "relu": (lambda v: np.maximum(v, 0), randn, EXACT),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    ref, gen, tol = UNARY[op]
    x = te.placeholder((3, 37), name="x")
    a = gen(3, 37)
    check(compiled([x], getattr(ops, op)(x), [a]), ref(a.astype("float64")), tol)


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "power": np.power}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_with_broadcast(op):
    a_t, b_t = te.placeholder((4, 1, 6), name="a"), te.placeholder((5, 1), name="b")
    gen = positive if op in ("power", "divide") else randn
    a, b = gen(4, 1, 6), gen(5, 1)
    check(compiled([a_t, b_t], getattr(ops, op)(a_t, b_t), [a, b]),
          BINARY[op](a.astype("float64"), b.astype("float64")), ROUNDED)


def test_cast_clip_bias_add():
    x, b = te.placeholder((2, 3, 5), name="x"), te.placeholder((3,), name="b")
    a, bias = randn(2, 3, 5) * 5, randn(3)
    check(compiled([x], ops.cast(x, "int32"), [a]), np.trunc(a), EXACT)
    check(compiled([x], ops.clip(x, -1.0, 2.0), [a]), np.clip(a, -1, 2), EXACT)
    check(compiled([x, b], ops.bias_add(x, b, axis=1), [a, bias]),
          a.astype("float64") + bias[:, None], ROUNDED)


@pytest.mark.parametrize("sa,sb,ta,tb", [((33, 17), (17, 20), False, False),
                                         ((17, 33), (20, 17), True, True),
                                         ((2, 5, 3), (3, 4), False, False),
                                         ((7,), (7, 3), False, False)], ids=str)
def test_matmul(sa, sb, ta, tb):
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    a, b = randn(*sa), randn(*sb)
    a64 = np.swapaxes(a, -1, -2).astype("float64") if ta else a.astype("float64")
    b64 = np.swapaxes(b, -1, -2).astype("float64") if tb else b.astype("float64")
    check(compiled([a_t, b_t], ops.matmul(a_t, b_t, transpose_a=ta, transpose_b=tb), [a, b]),
          np.matmul(a64, b64), SUMS)


def test_batch_matmul():
    a_t, b_t = te.placeholder((3, 5, 4), name="a"), te.placeholder((3, 4, 6), name="b")
    a, b = randn(3, 5, 4), randn(3, 4, 6)
    check(compiled([a_t, b_t], ops.batch_matmul(a_t, b_t), [a, b]),
          a.astype("float64") @ b.astype("float64"), SUMS)


def conv2d_ref(x, w, stride, pad, groups):
    x = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = w.astype("float64")
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for ff in range(f):
        g = ff // (f // groups)
        for y in range(kh):
            for xx in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, y:y + stride * oh:stride, xx:xx + stride * ow:stride]
                out[:, ff] += np.einsum("nchw,c->nhw", patch, w[ff, :, y, xx])
    return out


@pytest.mark.parametrize("ds,ws,stride,pad,groups", [((1, 3, 9, 9), (4, 3, 3, 3), 1, 1, 1),
                                                     ((2, 4, 8, 7), (6, 2, 3, 3), 2, 0, 2)],
                         ids=str)
def test_conv2d(ds, ws, stride, pad, groups):
    d_t, w_t = te.placeholder(ds, name="data"), te.placeholder(ws, name="weight")
    d, w = randn(*ds), randn(*ws)
    out = ops.conv2d(d_t, w_t, stride=stride, padding=pad, groups=groups)
    check(compiled([d_t, w_t], out, [d, w]), conv2d_ref(d, w, stride, pad, groups), SUMS)


def pool_ref(x, kind, k, s, pad):
    big = -np.inf if kind == "max" else np.nan
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                constant_values=big)
    n, c, h, w = xp.shape
    oh, ow = (h - k) // s + 1, (w - k) // s + 1
    wins = np.stack([xp[:, :, y:y + s * oh:s, xx:xx + s * ow:s] for y in range(k)
                     for xx in range(k)])
    return wins.max(axis=0) if kind == "max" else np.nanmean(wins, axis=0)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling(kind):
    d_t = te.placeholder((1, 3, 9, 9), name="data")
    d = randn(1, 3, 9, 9)
    op = ops.max_pool2d if kind == "max" else ops.avg_pool2d
    check(compiled([d_t], op(d_t, 3, stride=2, padding=1), [d]), pool_ref(d, kind, 3, 2, 1),
          EXACT if kind == "max" else SUMS)


def test_softmax_and_layer_norm():
    x = te.placeholder((3, 10), name="x")
    g_t, b_t = te.placeholder((10,), name="g"), te.placeholder((10,), name="b")
    a, g, b = randn(3, 10) * 3, randn(10), randn(10)
    a64 = a.astype("float64")
    e = np.exp(a64 - a64.max(axis=-1, keepdims=True))
    check(compiled([x], ops.softmax(x), [a]), e / e.sum(axis=-1, keepdims=True), SUMS)
    norm = (a64 - a64.mean(-1, keepdims=True)) / np.sqrt(a64.var(-1, keepdims=True) + 1e-5)
    check(compiled([x, g_t, b_t], ops.layer_norm(x, g_t, b_t, epsilon=1e-5), [a, g, b]),
          norm * g + b, SUMS)


def test_transforms():
    x = te.placeholder((2, 3, 5), name="x")
    a = randn(2, 3, 5)
    check(compiled([x], ops.transpose(x, (2, 0, 1)), [a]), np.transpose(a, (2, 0, 1)), EXACT)
    check(compiled([x], ops.reshape(x, (5, -1)), [a]), a.reshape(5, -1), EXACT)
    check(compiled([x], ops.pad(x, ((0, 0), (1, 2), (2, 0)), 1.5), [a]),
          np.pad(a, ((0, 0), (1, 2), (2, 0)), constant_values=1.5), EXACT)


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_reductions(kind):
    x = te.placeholder((3, 5, 17), name="x")
    a = randn(3, 5, 17)
    out = getattr(ops, f"reduce_{kind}")(x, axis=(0, 2), keepdims=True)
    check(compiled([x], out, [a]), getattr(np, kind)(a.astype("float64"), axis=(0, 2),
                                                      keepdims=True),
          SUMS if kind in ("sum", "mean") else EXACT)


def test_every_operator_is_covered():
    covered = set(UNARY) | set(BINARY) | {"cast", "clip", "bias_add", "matmul", "batch_matmul",
                                          "conv2d", "max_pool2d", "avg_pool2d", "softmax",
                                          "layer_norm", "transpose", "reshape", "pad",
                                          "reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}
    assert set(ops.__all__) <= covered, set(ops.__all__) - covered
