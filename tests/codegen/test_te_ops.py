"""Every operator of ``mb.te.ops`` compiled to native code and checked against numpy
(float64 references of the same float32 inputs)."""

from __future__ import annotations

import math
from pathlib import Path

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
    "erf": (np.vectorize(math.erf), randn, ROUNDED), "neg": (np.negative, randn, EXACT),
    "abs": (np.abs, randn, EXACT), "floor": (np.floor, lambda *s: randn(*s) * 4, EXACT),
    "ceil": (np.ceil, lambda *s: randn(*s) * 4, EXACT), "relu": (lambda v: np.maximum(v, 0), randn, EXACT),
    "reciprocal": (lambda v: 1 / v, positive, ROUNDED),
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary(op):
    ref, gen, tol = UNARY[op]
    x = te.placeholder((3, 37), name="x")
    a = gen(3, 37)
    check(compiled([x], getattr(ops, op)(x), [a]), ref(a.astype("float64")), tol)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "maximum": np.maximum, "minimum": np.minimum, "pow": np.power}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_with_broadcast(op):
    a_t, b_t = te.placeholder((4, 1, 6), name="a"), te.placeholder((5, 1), name="b")
    gen = positive if op in ("pow", "div") else randn
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
    out = getattr(ops, kind)(x, axis=(0, 2), keepdims=True)
    check(compiled([x], out, [a]), getattr(np, kind)(a.astype("float64"), axis=(0, 2),
                                                      keepdims=True),
          SUMS if kind in ("sum", "mean") else EXACT)


def test_activations_with_parameters():
    x = te.placeholder((3, 11), name="x")
    a = randn(3, 11)
    a64 = a.astype("float64")
    check(compiled([x], ops.leaky_relu(x, 0.2), [a]), np.where(a64 < 0, 0.2 * a64, a64), ROUNDED)
    erf = np.vectorize(math.erf)
    check(compiled([x], ops.gelu(x), [a]), 0.5 * a64 * (1 + erf(a64 / math.sqrt(2))), ROUNDED)


def test_comparisons_where_and_integer_division():
    a_t, b_t = te.placeholder((4, 5), name="a"), te.placeholder((5,), name="b")
    a, b = randn(4, 5), randn(5)
    for op, ref in (("equal", np.equal), ("less", np.less), ("greater", np.greater)):
        got = compiled([a_t, b_t], getattr(ops, op)(a_t, b_t), [a, b])
        assert got.dtype == np.bool_ and np.array_equal(got, ref(a, b)), op
    c_t = te.placeholder((4, 5), "bool", name="c")
    c = a > 0
    check(compiled([c_t, a_t, b_t], ops.where(c_t, a_t, b_t), [c, a, b]), np.where(c, a, b), EXACT)
    i_t, j_t = te.placeholder((6,), "int32", name="i"), te.placeholder((6,), "int32", name="j")
    i, j = np.array([-7, 7, -7, 7, 0, 5], "int32"), np.array([2, 2, -2, -2, 3, 5], "int32")
    want = (np.sign(i) * np.sign(j) * (np.abs(i) // np.abs(j))).astype("int32")
    assert np.array_equal(compiled([i_t, j_t], ops.div(i_t, j_t), [i, j]), want)


def test_gemm_with_epilogue_and_packed_b():
    a_t, w_t, c_t = (te.placeholder((5, 6), name="a"), te.placeholder((4, 6), name="w"),
                     te.placeholder((4,), name="c"))
    a, w, c = randn(5, 6), randn(4, 6), randn(4)
    a64, w64 = a.astype("float64"), w.astype("float64")
    out = ops.gemm(a_t, w_t, c_t, alpha=0.5, beta=2.0, trans_b=True)
    check(compiled([a_t, w_t, c_t], out, [a, w, c]), 0.5 * a64 @ w64.T + 2.0 * c, SUMS)
    p_t = te.placeholder((2, 6, 2), name="p")  # (K, N) = (6, 4) in panels of 2 columns
    packed = np.ascontiguousarray(w.T.reshape(6, 2, 2).transpose(1, 0, 2))
    check(compiled([a_t, p_t], ops.gemm(a_t, p_t, b_panel=2), [a, packed]), a64 @ w64.T, SUMS)


def test_conv_and_pooling_in_one_spatial_dimension():
    d_t, w_t, b_t = (te.placeholder((2, 3, 10), name="d"), te.placeholder((4, 3, 3), name="w"),
                     te.placeholder((4,), name="b"))
    d, w, b = randn(2, 3, 10), randn(4, 3, 3), randn(4)
    dp = np.pad(d.astype("float64"), ((0, 0), (0, 0), (2, 1)))
    want = np.stack([np.einsum("ncr,fcr->nf", dp[:, :, o * 2:o * 2 + 3], w) for o in range(6)],
                    axis=-1) + b[:, None]
    check(compiled([d_t, w_t, b_t], ops.conv(d_t, w_t, b_t, strides=2, pads=(2, 1)), [d, w, b]),
          want, SUMS)
    # ceil_mode: the last window starts inside the input and hangs over its end
    check(compiled([d_t], ops.max_pool(d_t, 3, strides=4, ceil_mode=True), [d]),
          np.stack([d[:, :, o * 4:o * 4 + 3].max(-1) for o in range(3)], axis=-1), EXACT)
    check(compiled([d_t], ops.avg_pool(d_t, 3, strides=4, ceil_mode=True), [d]),
          np.stack([d[:, :, o * 4:o * 4 + 3].astype("float64").mean(-1) for o in range(3)],
                   axis=-1), SUMS)
    check(compiled([d_t], ops.global_avg_pool(d_t), [d]),
          d.astype("float64").mean(-1, keepdims=True), SUMS)


def test_log_softmax_batch_norm_and_layer_norm_statistics():
    x = te.placeholder((3, 4, 5), name="x")
    a = randn(3, 4, 5) * 3
    a64 = a.astype("float64")
    s = a64 - a64.max(axis=1, keepdims=True)
    check(compiled([x], ops.log_softmax(x, axis=1), [a]),
          s - np.log(np.exp(s).sum(axis=1, keepdims=True)), SUMS)
    stats = [te.placeholder((4,), name=n) for n in ("scale", "bias", "mean", "var")]
    sc, bi, me, va = randn(4), randn(4), randn(4), positive(4)
    out = ops.batch_norm(x, *stats, epsilon=1e-3)
    want = (a64 - me[:, None]) / np.sqrt(va[:, None] + 1e-3) * sc[:, None] + bi[:, None]
    check(compiled([x, *stats], out, [a, sc, bi, me, va]), want, SUMS)
    y, mean, inv = ops.layer_norm(x, axis=1, return_stats=True)
    func = te.create_prim_func([x, y, mean, inv])
    outs = [np.zeros((3, 4, 5), "float32"), np.zeros((3, 1, 1), "float32"),
            np.zeros((3, 1, 1), "float32")]
    mb.build(func)(a, *outs)
    m64 = a64.mean(axis=(1, 2), keepdims=True)
    check(outs[1], m64, SUMS)
    check(outs[2], 1 / np.sqrt(a64.var(axis=(1, 2), keepdims=True) + 1e-5), SUMS)


def test_float16_is_computed_in_float32():
    x = te.placeholder((2, 300), "float16", name="x")
    a = (RNG.standard_normal((2, 300)) * 4).astype("float16")
    out = compiled([x], ops.softmax(x), [a])
    assert out.dtype == np.float16
    e = np.exp(a.astype("float32") - a.astype("float32").max(-1, keepdims=True))
    np.testing.assert_allclose(out.astype("float32"), e / e.sum(-1, keepdims=True), rtol=1e-3,
                               atol=1e-5)


def test_concat_split_slice_gather_and_pad_modes():
    x, y = te.placeholder((2, 3), name="x"), te.placeholder((2, 4), name="y")
    a, b = randn(2, 3), randn(2, 4)
    check(compiled([x, y], ops.concat([x, y], axis=1), [a, b]), np.concatenate([a, b], 1), EXACT)
    p, q = ops.split(y, (1, 3), axis=1)
    check(compiled([y], q, [b]), b[:, 1:], EXACT)
    assert p.shape == (2, 1)
    check(compiled([y], ops.slice(y, (3,), (-100,), axes=(1,), steps=(-2,)), [b]), b[:, 3::-2],
          EXACT)
    i_t = te.placeholder((3,), "int64", name="i")
    idx = np.array([2, -1, 0], "int64")
    check(compiled([y, i_t], ops.gather(y, i_t, axis=1), [b, idx]), np.take(b, idx, axis=1),
          EXACT)
    for mode in ("reflect", "edge", "wrap"):
        want = np.pad(b, ((1, 0), (2, 3)), mode={"edge": "edge", "wrap": "wrap",
                                                 "reflect": "reflect"}[mode])
        check(compiled([y], ops.pad(y, ((1, 0), (2, 3)), mode=mode), [b]), want, EXACT)
    check(compiled([y], ops.pad(y, ((0, 1), (-1, -2)), 3.0), [b]),
          np.pad(b[:, 1:2], ((0, 1), (0, 0)), constant_values=3.0), EXACT)


def test_full_reduction_to_a_0d_tensor():
    x = te.placeholder((3, 7), name="x")
    a = randn(3, 7)
    out = ops.sum(x)
    assert out.shape == ()
    check(compiled([x], out, [a]), a.astype("float64").sum(), SUMS)


def test_lrn_sums_squares_over_neighbouring_channels_that_exist():
    x = te.placeholder((2, 5, 3, 3), name="x")
    a = randn(2, 5, 3, 3)
    a64 = a.astype("float64")
    sq = np.stack([(a64[:, max(0, c - 1):c + 2] ** 2).sum(axis=1) for c in range(5)], axis=1)
    check(compiled([x], ops.lrn(x, size=3, alpha=0.3, beta=0.75, bias=2.0), [a]),
          a64 / (2.0 + 0.1 * sq) ** 0.75, SUMS)


@pytest.mark.parametrize("interleaved", [False, True])
def test_rotary_embedding_rotates_pairs_as_complex_numbers(interleaved):
    x_t = te.placeholder((1, 2, 3, 6), name="x")
    c_t, s_t = te.placeholder((1, 3, 2), name="c"), te.placeholder((1, 3, 2), name="s")
    x, theta = randn(1, 2, 3, 6), randn(1, 3, 2)
    got = compiled([x_t, c_t, s_t], ops.rotary_embedding(x_t, c_t, s_t, interleaved, 4),
                   [x, np.cos(theta).astype("float32"), np.sin(theta).astype("float32")])
    # the pairs of the first 4 features, as complex numbers, times exp(i theta)
    first, second = (x[..., 0:4:2], x[..., 1:4:2]) if interleaved else (x[..., :2], x[..., 2:4])
    z = (first + 1j * second) * np.exp(1j * theta[:, None].astype("float64"))
    expected = x.astype("float64").copy()
    if interleaved:
        expected[..., 0:4:2], expected[..., 1:4:2] = z.real, z.imag
    else:
        expected[..., :2], expected[..., 2:4] = z.real, z.imag
    check(got, expected, ROUNDED)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64"])
def test_bitwise_operators_on_every_bit_pattern(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (3, 37), dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (37,), dtype=dtype, endpoint=True)
    x, y = te.placeholder((3, 37), dtype, name="x"), te.placeholder((37,), dtype, name="y")
    for op, ref in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor)):
        check(compiled([x, y], getattr(ops, op)(x, y), [a, b]), ref(a, b), EXACT)


def test_bitcast_reads_the_bits_as_another_type():
    a = randn(3, 37)
    x = te.placeholder((3, 37), name="x")
    got = compiled([x], ops.bitcast(x, "int32"), [a])
    assert got.dtype == np.int32 and np.array_equal(got, a.view("int32"))
    i = te.placeholder((3, 37), "int32", name="i")
    assert np.array_equal(compiled([i], ops.bitcast(i, "float32"), [got]).view("int32"), got)


def test_cumprod_and_max_pool_indices():
    a = RNG.uniform(0.5, 1.5, (3, 9)).astype("float32")
    x = te.placeholder((3, 9), name="x")
    check(compiled([x], ops.cumprod(x, axis=1, reverse=True), [a]),
          np.cumprod(a.astype("float64")[:, ::-1], axis=1)[:, ::-1], SUMS)
    # integer-valued data: equal maxima in a window, of which the first (row-major) wins
    d = RNG.integers(0, 3, (2, 2, 5, 5)).astype("float32")
    p = te.placeholder((2, 2, 5, 5), name="p")
    got = compiled([p], ops.max_pool_indices(p, (2, 2), strides=(2, 2), pads=(0, 0, 1, 1)),
                   [d])
    want = np.zeros((2, 2, 3, 3), np.int64)
    for n, c, i, j in np.ndindex(want.shape):
        window = [(h, w) for h in range(2 * i, 2 * i + 2) for w in range(2 * j, 2 * j + 2)
                  if h < 5 and w < 5]
        h, w = max(window, key=lambda hw: (d[n, c][hw], -hw[0], -hw[1]))
        want[n, c, i, j] = ((n * 2 + c) * 5 + h) * 5 + w
    check(got, want, EXACT)


def test_every_operator_is_covered():
    from mlcbook import ops as mb_ops
    covered = set(UNARY) | set(BINARY) | {
        "cast", "clip", "bias_add", "matmul", "batch_matmul", "conv2d", "max_pool2d",
        "avg_pool2d", "softmax", "layer_norm", "transpose", "reshape", "pad", "sum",
        "mean", "max", "min", "leaky_relu", "gelu", "equal", "less",
        "greater", "where", "div", "gemm", "conv", "max_pool", "avg_pool",
        "global_avg_pool", "log_softmax", "batch_norm", "concat", "split", "slice", "gather", "lrn",
        "rotary_embedding", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
        "bitcast", "cumprod", "max_pool_indices"}
    # the operators added for ONNX's operator set are checked, compiled, by onnx's node
    # suite (tests/frontend/test_conformance.py) through the graph op of the same name
    # operators whose own test file compiles them against onnxruntime (by their ONNX names)
    compiled_elsewhere = {"grid_sample": ("frontend/test_onnx_grid_sample.py", "GridSample"),
                          "affine_grid": ("frontend/test_onnx_grid_sample.py", "AffineGrid"),
                          "recurrent": ("frontend/test_onnx_recurrent_ops.py", "LSTM")}
    for path, onnx_name in compiled_elsewhere.values():
        assert onnx_name in (Path(__file__).parents[1] / path).read_text(), (path, onnx_name)
    covered |= set(compiled_elsewhere)
    by_node_suite = {name for name in ops.__all__ if name not in covered}
    assert by_node_suite <= set(mb_ops.list_ops()), by_node_suite - set(mb_ops.list_ops())
    assert len(by_node_suite) <= 50
