"""The training-mode ops (mlcbook/ops/training.py) against float64 numpy: batch_norm_train
(batch statistics) and dropout (a seeded, counter-driven mask), interpreted and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpAttributeError, OpDTypeError, OpShapeError
from mlcbook.graph import Constant, Function, Var, interpret
from mlcbook.graph.expr import Call
from mlcbook.ops import Attrs, TensorType

RNG = np.random.default_rng(3)


def _bn_function(shape, dtype, **attrs):
    c = shape[1]
    x = Var("x", TensorType(shape, dtype))
    w = [Constant(RNG.standard_normal(c).astype(dtype), n) for n in ("s", "b", "m")]
    w.append(Constant((RNG.random(c) + 0.5).astype(dtype), "v"))
    return Function([x], Call("batch_norm_train", (x, *w), Attrs(attrs))), w


def _bn_numpy(x, scale, bias, eps):
    axes = tuple(d for d in range(x.ndim) if d != 1)
    c = tuple(slice(None) if d == 1 else None for d in range(x.ndim))
    x = x.astype(np.float64)
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * scale.astype(np.float64)[c] + bias.astype(np.float64)[c]


@pytest.mark.parametrize("shape", [(4, 3, 5, 5), (6, 2), (2, 3, 7)])
def test_batch_norm_train_normalizes_with_the_batch_statistics(shape):
    f, w = _bn_function(shape, "float64", epsilon=1e-3)
    x = RNG.standard_normal(shape) * 3 + 1
    want = _bn_numpy(x, w[0].data, w[1].data, 1e-3)
    np.testing.assert_allclose(interpret(f, x), want, rtol=1e-12, atol=1e-12)


def test_batch_norm_train_compiled_float32_matches_numpy():
    f, w = _bn_function((4, 3, 6, 6), "float32", epsilon=1e-5)
    x = (RNG.standard_normal((4, 3, 6, 6)) * 2 + 0.5).astype("float32")
    want = _bn_numpy(x, w[0].data, w[1].data, 1e-5)
    np.testing.assert_allclose(mb.compile(f)(x), want, rtol=1e-5, atol=1e-5)


def test_batch_norm_train_ignores_the_running_statistics():
    f, w = _bn_function((2, 3, 4), "float64")
    g = Function(f.params, Call("batch_norm_train", (f.params[0], w[0], w[1],
                                                     Constant(np.full(3, 9.0), "m"),
                                                     Constant(np.full(3, 4.0), "v"))))
    x = RNG.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(interpret(f, x), interpret(g, x))


def test_batch_norm_train_refuses_a_bad_momentum():
    with pytest.raises(OpAttributeError, match=r"momentum=1.5 is not in \[0, 1\]"):
        _bn_function((2, 3), "float32", momentum=1.5)


def test_batch_norm_train_refuses_statistics_of_the_wrong_shape():
    x = Var("x", TensorType((2, 3, 4), "float32"))
    w = [Constant(np.ones(4, "float32")) for _ in range(4)]
    with pytest.raises(OpShapeError, match=r"scale must have shape \(3,\) \(one per channel\)"):
        Call("batch_norm_train", (x, *w))


# --- dropout ----------------------------------------------------------------------------------
def _mix(h):
    """lowbias32, written in numpy from its definition (the test's own oracle)."""
    h = h.astype(np.uint64) & 0xFFFFFFFF
    h ^= h >> 16
    h = (h * 0x7FEB352D) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x846CA68B) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def _dropout_numpy(x, counter, ratio, seed):
    key = _mix(np.uint64((counter * 0x9E3779B9 + seed) & 0xFFFFFFFF))
    flat = np.arange(x.size, dtype=np.uint64)
    h = _mix((flat + key) & 0xFFFFFFFF).reshape(x.shape)
    keep = h >= min(round(ratio * 2 ** 32), 2 ** 32 - 1)
    return np.where(keep, x.astype(np.float64) / (1 - ratio), 0.0), keep


def _dropout_function(shape, ratio, seed, dtype="float32"):
    x, c = Var("x", TensorType(shape, dtype)), Var("c", TensorType((), "int64"))
    return Function([x, c], Call("dropout", (x, c), Attrs(ratio=ratio, seed=seed)))


@pytest.mark.parametrize("counter", [0, 1, 7, 2 ** 33 + 5])
def test_dropout_mask_is_the_documented_hash(counter):
    f = _dropout_function((3, 4, 5), 0.3, 11, "float64")
    x = RNG.standard_normal((3, 4, 5))
    want, _ = _dropout_numpy(x, counter, 0.3, 11)
    np.testing.assert_allclose(interpret(f, x, np.int64(counter)), want, rtol=1e-15)


def test_dropout_compiled_is_bit_identical_to_the_interpreter():
    f = _dropout_function((16, 33), 0.25, 5)
    x = RNG.standard_normal((16, 33)).astype("float32")
    exe = mb.compile(f)
    for counter in (0, 3):
        np.testing.assert_array_equal(exe(x, np.int64(counter)),
                                      interpret(f, x, np.int64(counter)))


def test_dropout_drops_about_ratio_and_a_new_counter_draws_a_new_mask():
    f = _dropout_function((100, 100), 0.3, 0)
    x = np.ones((100, 100), "float32")
    a, b = interpret(f, x, np.int64(0)), interpret(f, x, np.int64(1))
    assert abs((a == 0).mean() - 0.3) < 0.02
    # independent masks disagree on 2 * 0.3 * 0.7 = 0.42 of the elements
    assert 0.39 < ((a == 0) != (b == 0)).mean() < 0.45
    np.testing.assert_allclose(a[a != 0], 1 / 0.7, rtol=1e-6)


def test_dropout_with_ratio_zero_keeps_everything():
    f = _dropout_function((5, 6), 0.0, 3)
    x = RNG.standard_normal((5, 6)).astype("float32")
    np.testing.assert_array_equal(interpret(f, x, np.int64(4)), x)


def test_dropout_refuses_a_ratio_of_one():
    with pytest.raises(OpAttributeError, match=r"ratio=1.0 is not in \[0, 1\)"):
        _dropout_function((2, 2), 1.0, 0)


def test_dropout_refuses_a_float_counter():
    x, c = Var("x", TensorType((2,), "float32")), Var("c", TensorType((), "float32"))
    with pytest.raises(OpDTypeError, match="the counter must be a 0-d int64 or int32 tensor"):
        Call("dropout", (x, c))
