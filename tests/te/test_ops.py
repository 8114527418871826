"""Every operator of ``mb.te.ops``, built with ``create_prim_func`` and run by the interpreter,
against an independent numpy reference computed in float64 from the same float32 inputs.

Tolerances (``np.testing.assert_allclose(actual, expected, rtol, atol)``), per operator:

==========================================  ==========  ==========  ===========================
operator                                    rtol        atol        why
==========================================  ==========  ==========  ===========================
transpose, reshape, pad, relu, negative,    0           0           exact: data movement or
abs, floor, ceil, maximum, minimum, cast,                           ops whose float32 result
clip, max_pool2d, reduce_max/min, int ops                           is exact
add, subtract, multiply, divide, exp, log,  1e-6        1e-7        one float32 rounding of a
sqrt, rsqrt, tanh, sigmoid, erf, power,                             correctly rounded float64
bias_add                                                            result
matmul, batch_matmul, conv2d, avg_pool2d,   1e-5        1e-6        sums of up to ~100 terms
reduce_sum/mean, softmax, layer_norm                                rounded once to float32
==========================================  ==========  ==========  ===========================

(The interpreter accumulates in float64 and rounds on every store, so the float32 results
are within a few ulps of the float64 reference; a sum of products is rounded once per term.)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import te
from mlcbook.te import ops

EXACT = dict(rtol=0, atol=0)
ROUNDED = dict(rtol=1e-6, atol=1e-7)
SUMS = dict(rtol=1e-5, atol=1e-6)

rng = np.random.default_rng(2024)


def randn(*shape, dtype="float32"):
    return rng.standard_normal(shape).astype(dtype)


def positive(*shape):
    return rng.uniform(0.25, 3.0, shape).astype("float32")


def run(inputs, out, arrays):
    """Build ``[*inputs, out]``, interpret it on ``arrays``, return the output array."""
    func = te.create_prim_func([*inputs, out])
    result = np.full(out.shape, np.nan if out.dtype.startswith("float") else 0, out.dtype)
    mb.tir.interpret(func, *arrays, result)
    return result


def check(actual, expected, tol):
    assert actual.shape == np.shape(expected)
    np.testing.assert_allclose(actual.astype("float64"), expected, **tol)


# --- elementwise -------------------------------------------------------------------------------
UNARY = {
    "exp": (np.exp, randn, ROUNDED),
    "log": (np.log, positive, ROUNDED),
    "sqrt": (np.sqrt, positive, ROUNDED),
    "rsqrt": (lambda v: 1 / np.sqrt(v), positive, ROUNDED),
    "tanh": (np.tanh, randn, ROUNDED),
    "sigmoid": (lambda v: 1 / (1 + np.exp(-v)), randn, ROUNDED),
    "erf": (np.vectorize(math.erf), randn, ROUNDED),
    "neg": (np.negative, randn, EXACT),
    "abs": (np.abs, randn, EXACT),
    "floor": (np.floor, lambda *s: randn(*s) * 4, EXACT),
    "ceil": (np.ceil, lambda *s: randn(*s) * 4, EXACT),
}
SHAPES = [(7,), (3, 5), (2, 3, 5)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op, shape):
    ref, gen, tol = UNARY[op]
    x = te.placeholder(shape, name="x")
    a = gen(*shape)
    check(run([x], getattr(ops, op)(x), [a]), ref(a.astype("float64")), tol)


BINARY = {
    "add": (np.add, ROUNDED), "sub": (np.subtract, ROUNDED),
    "mul": (np.multiply, ROUNDED), "div": (np.divide, ROUNDED),
    "maximum": (np.maximum, EXACT), "minimum": (np.minimum, EXACT),
    "pow": (np.power, ROUNDED),
}
BROADCAST = [((3, 5), (3, 5)), ((3, 5), (5,)), ((4, 1, 3), (5, 1)), ((1,), (2, 3)),
             ((2, 1, 3), (2, 5, 1))]


@pytest.mark.parametrize("shapes", BROADCAST, ids=str)
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_broadcasts_like_numpy(op, shapes):
    ref, tol = BINARY[op]
    a_t, b_t = te.placeholder(shapes[0], name="a"), te.placeholder(shapes[1], name="b")
    gen = positive if op in ("pow", "div") else randn
    a, b = gen(*shapes[0]), gen(*shapes[1])
    check(run([a_t, b_t], getattr(ops, op)(a_t, b_t), [a, b]),
          ref(a.astype("float64"), b.astype("float64")), tol)


def test_binary_with_scalar_operand():
    x = te.placeholder((3, 4), name="x")
    a = randn(3, 4)
    check(run([x], ops.sub(1.5, x), [a]), 1.5 - a.astype("float64"), ROUNDED)
    check(run([x], ops.mul(x, 2), [a]), a.astype("float64") * 2, EXACT)


def test_integer_add_and_maximum():
    a_t, b_t = te.placeholder((4, 3), "int32", name="a"), te.placeholder((3,), "int32", name="b")
    a, b = rng.integers(-50, 50, (4, 3)).astype("int32"), rng.integers(-50, 50, 3).astype("int32")
    assert np.array_equal(run([a_t, b_t], ops.add(a_t, b_t), [a, b]), a + b)
    assert np.array_equal(run([a_t, b_t], ops.maximum(a_t, b_t), [a, b]), np.maximum(a, b))


def test_cast_and_clip():
    x = te.placeholder((2, 7), name="x")
    a = randn(2, 7) * 5
    check(run([x], ops.cast(x, "int32"), [a]), np.trunc(a).astype("float64"), EXACT)
    check(run([x], ops.clip(x, -1.0, 2.0), [a]), np.clip(a, -1, 2).astype("float64"), EXACT)


@pytest.mark.parametrize("shape", [(5,), (2, 3, 7)], ids=str)
def test_relu(shape):
    x = te.placeholder(shape, name="x")
    a = randn(*shape)
    check(run([x], ops.relu(x), [a]), np.maximum(a, 0).astype("float64"), EXACT)


@pytest.mark.parametrize("shape,axis", [((2, 3, 4, 5), 1), ((3, 7), -1), ((5, 3), 0)], ids=str)
def test_bias_add(shape, axis):
    x, b = te.placeholder(shape, name="x"), te.placeholder((shape[axis],), name="b")
    a, bias = randn(*shape), randn(shape[axis])
    expand = [1] * len(shape)
    expand[axis] = shape[axis]
    check(run([x, b], ops.bias_add(x, b, axis=axis), [a, bias]),
          a.astype("float64") + bias.reshape(expand), ROUNDED)


# --- linalg ------------------------------------------------------------------------------------
MATMUL = [  # (a shape, b shape, transpose_a, transpose_b)
    ((5, 7), (7, 3), False, False),
    ((7, 5), (7, 3), True, False),
    ((5, 7), (3, 7), False, True),
    ((7, 5), (3, 7), True, True),
    ((2, 5, 3), (3, 4), False, False),      # batch broadcast against a matrix
    ((3, 1, 4, 2), (5, 2, 6), False, False),  # batch dims (3, 1) x (5,) -> (3, 5)
    ((7,), (7, 3), False, False),           # vector @ matrix
    ((4, 7), (7,), False, False),           # matrix @ vector
]


@pytest.mark.parametrize("sa,sb,ta,tb", MATMUL, ids=str)
def test_matmul(sa, sb, ta, tb):
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    a, b = randn(*sa), randn(*sb)
    a64, b64 = a.astype("float64"), b.astype("float64")
    if ta:
        a64 = np.swapaxes(a64, -1, -2)
    if tb:
        b64 = np.swapaxes(b64, -1, -2)
    out = ops.matmul(a_t, b_t, transpose_a=ta, transpose_b=tb)
    check(run([a_t, b_t], out, [a, b]), np.matmul(a64, b64), SUMS)


@pytest.mark.parametrize("sa,sb,ta,tb", [((3, 5, 4), (3, 4, 2), False, False),
                                         ((1, 4, 5), (3, 2, 4), True, True)], ids=str)
def test_batch_matmul(sa, sb, ta, tb):
    a_t, b_t = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    a, b = randn(*sa), randn(*sb)
    a64 = np.swapaxes(a, -1, -2).astype("float64") if ta else a.astype("float64")
    b64 = np.swapaxes(b, -1, -2).astype("float64") if tb else b.astype("float64")
    out = ops.batch_matmul(a_t, b_t, transpose_a=ta, transpose_b=tb)
    check(run([a_t, b_t], out, [a, b]), a64 @ b64, SUMS)


# --- conv and pooling ----------------------------------------------------------------------------
def conv2d_ref(x, w, stride, pads, dilation, groups):
    """Direct loops over output positions, from the definition."""
    x, w = x.astype("float64"), w.astype("float64")
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    (sh, sw), (dh, dw), (pt, pl, pb, pr) = stride, dilation, pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, f, oh, ow))
    for ff in range(f):
        g = ff // (f // groups)
        for y in range(oh):
            for xx in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, y * sh:y * sh + dh * (kh - 1) + 1:dh,
                         xx * sw:xx * sw + dw * (kw - 1) + 1:dw]
                out[:, ff, y, xx] = (win * w[ff]).sum(axis=(1, 2, 3))
    return out


CONV = [  # data shape, weight shape, stride, padding, dilation, groups, expected pads
    ((1, 3, 7, 7), (4, 3, 3, 3), 1, 0, 1, 1, (0, 0, 0, 0)),
    ((2, 3, 9, 8), (5, 3, 3, 3), 2, 1, 1, 1, (1, 1, 1, 1)),
    ((1, 4, 7, 9), (6, 2, 3, 2), (2, 1), (1, 2), 1, 2, (1, 2, 1, 2)),
    ((1, 2, 9, 9), (3, 2, 3, 3), 1, (2, 1, 0, 2), 2, 1, (2, 1, 0, 2)),
    ((1, 6, 5, 5), (6, 1, 3, 3), 1, 1, 1, 6, (1, 1, 1, 1)),  # depthwise
]


@pytest.mark.parametrize("ds,ws,stride,padding,dilation,groups,pads", CONV, ids=str)
def test_conv2d(ds, ws, stride, padding, dilation, groups, pads):
    d_t, w_t = te.placeholder(ds, name="data"), te.placeholder(ws, name="weight")
    d, w = randn(*ds), randn(*ws)
    out = ops.conv2d(d_t, w_t, stride=stride, padding=padding, dilation=dilation, groups=groups)
    two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    check(run([d_t, w_t], out, [d, w]),
          conv2d_ref(d, w, two(stride), pads, two(dilation), groups), SUMS)


def pool_ref(x, kind, k, s, pads, dilation=(1, 1), count_include_pad=False):
    x = x.astype("float64")
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr) = k, s, dilation, pads
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, c, oh, ow))
    for y in range(oh):
        for xx in range(ow):
            vals, padded_count = [], 0
            for ry in range(kh):
                for rx in range(kw):
                    iy, ix = y * sh + ry * dh - pt, xx * sw + rx * dw - pl
                    padded_count += 1
                    if 0 <= iy < h and 0 <= ix < w:
                        vals.append(x[:, :, iy, ix])
            vals = np.stack(vals)
            if kind == "max":
                out[:, :, y, xx] = vals.max(axis=0)
            else:
                out[:, :, y, xx] = vals.sum(axis=0) / (padded_count if count_include_pad
                                                         else len(vals))
    return out


POOL = [  # data shape, pool_size, stride, padding, dilation, pads
    ((1, 2, 6, 6), 2, None, 0, 1, (0, 0, 0, 0)),
    ((2, 3, 7, 9), 3, 2, 1, 1, (1, 1, 1, 1)),
    ((1, 2, 8, 7), (3, 2), (1, 2), (1, 0, 2, 1), 1, (1, 0, 2, 1)),
    ((1, 1, 9, 9), 3, 2, 2, 2, (2, 2, 2, 2)),
]


@pytest.mark.parametrize("ds,k,s,padding,dil,pads", POOL, ids=str)
def test_max_pool2d(ds, k, s, padding, dil, pads):
    d_t = te.placeholder(ds, name="data")
    d = randn(*ds)
    two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    out = ops.max_pool2d(d_t, k, stride=s, padding=padding, dilation=dil)
    check(run([d_t], out, [d]),
          pool_ref(d, "max", two(k), two(k) if s is None else two(s), pads, two(dil)), EXACT)


@pytest.mark.parametrize("include", [False, True], ids=["exclude_pad", "include_pad"])
@pytest.mark.parametrize("ds,k,s,padding,dil,pads", POOL, ids=str)
def test_avg_pool2d(ds, k, s, padding, dil, pads, include):
    d_t = te.placeholder(ds, name="data")
    d = randn(*ds)
    two = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    out = ops.avg_pool2d(d_t, k, stride=s, padding=padding, dilation=dil,
                         count_include_pad=include)
    check(run([d_t], out, [d]), pool_ref(d, "avg", two(k), two(k) if s is None else two(s),
                                         pads, two(dil), include), SUMS)


# --- softmax, layer norm -------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axis", [((7,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1)],
                         ids=str)
def test_softmax(shape, axis):
    x = te.placeholder(shape, name="x")
    a = randn(*shape) * 3
    a64 = a.astype("float64")
    e = np.exp(a64 - a64.max(axis=axis, keepdims=True))
    check(run([x], ops.softmax(x, axis=axis), [a]), e / e.sum(axis=axis, keepdims=True), SUMS)


def test_softmax_is_stable_for_large_inputs():
    x = te.placeholder((2, 3), name="x")
    a = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, 0.0, 1000.0]], "float32")
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    check(run([x], ops.softmax(x), [a]), e / e.sum(axis=-1, keepdims=True), SUMS)


def _float16_softmaxes(a):
    """numpy's float16 softmax and log_softmax (every stage rounded to float16, as ONNX's
    reference) and the softmax rounded once from float64, for the same float16 input."""
    s = a - a.max(axis=-1, keepdims=True)
    e = np.exp(s)
    a64 = a.astype("float64")
    e64 = np.exp(a64 - a64.max(axis=-1, keepdims=True))
    once = (e64 / e64.sum(axis=-1, keepdims=True)).astype("float16")
    return e / e.sum(axis=-1, keepdims=True), s - np.log(e.sum(axis=-1, keepdims=True)), once


def test_float16_softmax_rounds_every_stage_to_float16():
    x = te.placeholder((16, 6), "float16", name="x")
    a = (randn(16, 6) * 3).astype("float16")
    staged, log_staged, once = _float16_softmaxes(a)
    assert (staged != once).any()  # the data tell the two roundings apart
    np.testing.assert_array_equal(run([x], ops.softmax(x), [a]), staged)
    np.testing.assert_array_equal(run([x], ops.log_softmax(x), [a]), log_staged)


def layer_norm_ref(a, gamma, beta, axis, eps):
    a = a.astype("float64")
    axes = tuple(range(axis % a.ndim, a.ndim))
    y = (a - a.mean(axis=axes, keepdims=True)) / np.sqrt(a.var(axis=axes, keepdims=True) + eps)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return y


@pytest.mark.parametrize("shape,axis,affine", [((3, 7), -1, True), ((2, 3, 5), -2, True),
                                               ((5,), 0, False), ((2, 3, 4), 0, True)], ids=str)
def test_layer_norm(shape, axis, affine):
    x = te.placeholder(shape, name="x")
    inner = shape[axis % len(shape):]
    a = randn(*shape) * 2 + 1
    params, arrays, g, b = [x], [a], None, None
    if affine:
        g_t, b_t = te.placeholder(inner, name="gamma"), te.placeholder(inner, name="beta")
        g, b = randn(*inner), randn(*inner)
        params += [g_t, b_t]
        arrays += [g, b]
    out = ops.layer_norm(x, *(params[1:] if affine else []), axis=axis, epsilon=1e-3)
    check(run(params, out, arrays), layer_norm_ref(a, g, b, axis, 1e-3), SUMS)


@pytest.mark.parametrize("n", [3, 7, 100])
def test_layer_norm_of_equal_values_is_exactly_zero(n):
    # a float32 sum of n copies times 1/n is not always the value itself, and 1/sqrt(eps)
    # would magnify that ulp to ~1e-4; the mean of deviations from the first element is exact
    x = te.placeholder((2, n), name="x")
    a = np.full((2, n), 1.3132616, "float32")
    func = te.create_prim_func([x, ops.layer_norm(x, axis=-1, epsilon=1e-5)])
    interpreted, native = (np.full((2, n), np.nan, "float32") for _ in range(2))
    mb.tir.interpret(func, a, interpreted)
    mb.build(func)(a, native)
    check(interpreted, np.zeros((2, n)), EXACT)
    check(native, np.zeros((2, n)), EXACT)


# --- transform -----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axes", [((3, 5), None), ((2, 3, 5), (1, 2, 0)),
                                        ((2, 3, 4, 5), (0, 2, 3, 1)), ((4, 3), (-1, 0))], ids=str)
def test_transpose(shape, axes):
    x = te.placeholder(shape, name="x")
    a = randn(*shape)
    check(run([x], ops.transpose(x, axes), [a]), np.transpose(a, axes).astype("float64"), EXACT)


@pytest.mark.parametrize("shape,new", [((3, 5), (15,)), ((2, 3, 5), (5, -1)),
                                       ((6, 5), (3, 2, 5)), ((7,), (7, 1)), ((2, 6), (4, 3))],
                         ids=str)
def test_reshape(shape, new):
    x = te.placeholder(shape, name="x")
    a = randn(*shape)
    check(run([x], ops.reshape(x, new), [a]), a.reshape(new).astype("float64"), EXACT)


@pytest.mark.parametrize("shape,width,value", [((3, 5), ((1, 2), (0, 3)), 0.0),
                                               ((4,), 2, -1.5),
                                               ((2, 3, 3), ((0, 0), (2, 0), (1, 1)), 7.0)],
                         ids=str)
def test_pad(shape, width, value):
    x = te.placeholder(shape, name="x")
    a = randn(*shape)
    check(run([x], ops.pad(x, width, value), [a]),
          np.pad(a, width, constant_values=value).astype("float64"), EXACT)


# --- reductions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), ((0, 2), True), (-1, True)],
                         ids=str)
@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
def test_reductions(kind, axis, keepdims):
    x = te.placeholder((3, 5, 2), name="x")
    a = randn(3, 5, 2)
    out = getattr(ops, kind)(x, axis=axis, keepdims=keepdims)
    expected = getattr(np, kind)(a.astype("float64"), axis=axis, keepdims=keepdims)
    check(run([x], out, [a]), expected, SUMS if kind in ("sum", "mean") else EXACT)


def test_integer_reductions_use_integer_identities():
    # all values negative: a max starting from 0 instead of the lowest int32 would be wrong
    x = te.placeholder((4, 5), "int32", name="x")
    a = rng.integers(-100, -1, (4, 5)).astype("int32")
    assert np.array_equal(run([x], ops.max(x, axis=1), [a]), a.max(axis=1))
    b = -a
    assert np.array_equal(run([x], ops.min(x, axis=1), [b]), b.min(axis=1))
    assert np.array_equal(run([x], ops.sum(x, axis=0), [a]), a.sum(axis=0))
