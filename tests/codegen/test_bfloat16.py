"""bfloat16 compiled (scalar and vectorized) and interpreted, against ml_dtypes' bfloat16:
a float32 in registers, rounded to nearest-even bfloat16 on every store and cast."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mlcbook import tir
from mlcbook.tir import cast

from ._util import native_and_interpreted as both

BF16 = ml_dtypes.bfloat16
RNG = np.random.default_rng(5)
LANES = [None, 8]
N = 64


def data(n=N, scale=100.0):
    x = (RNG.standard_normal(n) * scale).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, 3.0e38, 1.0 + 2.0**-8]  # a tie: rounds to even
    return x


def same_bits(got, expected):
    np.testing.assert_array_equal(np.asarray(got, BF16).view(np.uint16),
                                  np.asarray(expected, BF16).view(np.uint16))


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("src", ["float32", "float16", "int32", "uint8", "int64"])
def test_cast_to_bfloat16_rounds_to_nearest_even(src, lanes):
    x = data(scale=30.0) if src.startswith("float") else RNG.integers(0, 250, N)
    with np.errstate(over="ignore", invalid="ignore"):
        x = x.astype(src)
    same_bits(both(lambda v: cast("bfloat16", v), [src], "bfloat16", x, lanes=lanes),
              x.astype(np.float32).astype(BF16))


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "uint16"])
def test_cast_from_bfloat16_is_exact(dst, lanes):
    x = np.abs(data(scale=50.0)[8:]).astype(BF16)
    x = np.concatenate([x[:N - 8], np.array([0.5, 1.5, 255, 3, 7.5, 9, 1, 2], BF16)])
    np.testing.assert_array_equal(both(lambda v: cast(dst, v), ["bfloat16"], dst, x,
                                       lanes=lanes), x.astype(np.float32).astype(dst))


def test_nan_stays_nan_and_quiet():
    x = np.array([np.nan, -np.nan, 1.0, np.finfo(np.float32).max] * (N // 4), np.float32)
    bits = np.asarray(both(lambda v: cast("bfloat16", v), ["float32"], "bfloat16", x, lanes=8),
                      BF16).view(np.uint16)
    assert ((bits[0::4] & 0x7FC0) == 0x7FC0).all()       # NaN, not inf, and quiet
    assert (bits[3::4] == 0x7F80).all()                  # the largest float32 rounds to inf


@pytest.mark.parametrize("lanes", LANES)
def test_arithmetic_computes_in_float32_and_rounds_on_store(lanes):
    a, b = data().astype(BF16), data().astype(BF16)
    f32 = lambda v: v.astype(np.float32)  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):
        for name, fn, ref in [("add", lambda x, y: x + y, f32(a) + f32(b)),
                              ("mul-add", lambda x, y: x * y + x, f32(a) * f32(b) + f32(a)),
                              ("max", tir.max, np.maximum(f32(a), f32(b))),
                              ("exp", lambda x, y: tir.exp(x / tir.const(64.0, "bfloat16")),
                               np.exp(f32(a) / 64))]:
            got = both(fn, ["bfloat16"] * 2, "bfloat16", a, b, lanes=lanes)
            np.testing.assert_allclose(got.astype(np.float32), ref.astype(BF16).astype(
                np.float32), rtol=2**-7, err_msg=name)


def test_bfloat16_constants_are_rounded():
    x = np.zeros(N, BF16)
    got = both(lambda v: v + tir.const(1.0 + 2.0**-9 + 2.0**-8, "bfloat16"), ["bfloat16"],
               "bfloat16", x)
    same_bits(got, np.full(N, 1.0 + 2.0**-7, np.float32))
