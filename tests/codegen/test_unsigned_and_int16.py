"""int16, uint16, uint32, uint64 compiled (scalar and vectorized) and interpreted, against
numpy: wrapping arithmetic, unsigned compare/divide, widening casts, float conversions."""

from __future__ import annotations

import numpy as np
import pytest

from mlcbook import tir
from mlcbook.tir import cast

from ._util import native_and_interpreted as both

RNG = np.random.default_rng(11)
LANES = [None, 8]
N = 32
NEW = ["int16", "uint16", "uint32", "uint64"]


def data(dtype):
    """Values over the whole range, the extremes included (above 2**31 / 2**63 for uint)."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, N, dtype=dtype, endpoint=True)
    x[:4] = [info.min, info.max, info.max - 1, 0]
    return x


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", NEW)
def test_wrapping_arithmetic_min_max(dtype, lanes):
    a, b = data(dtype), data(dtype)
    for name, fn, ref in [("add", lambda x, y: x + y, np.add),
                          ("sub", lambda x, y: x - y, np.subtract),
                          ("mul", lambda x, y: x * y, np.multiply),
                          ("min", tir.min, np.minimum), ("max", tir.max, np.maximum)]:
        with np.errstate(over="ignore"):
            expected = ref(a, b)
        np.testing.assert_array_equal(both(fn, [dtype] * 2, dtype, a, b, lanes=lanes), expected,
                                      err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", NEW)
def test_division_modulo_and_comparisons(dtype, lanes):
    a, b = data(dtype), data(dtype)
    b[4:8] = 0                       # x // 0 == x % 0 == 0
    b[8:12] = [3, 7, 1, 2]
    b[12:16] = a[12:16]
    with np.errstate(divide="ignore", over="ignore"):
        np.testing.assert_array_equal(both(lambda x, y: x // y, [dtype] * 2, dtype, a, b,
                                           lanes=lanes), a // b)
        np.testing.assert_array_equal(both(lambda x, y: x % y, [dtype] * 2, dtype, a, b,
                                           lanes=lanes), a % b)
    for op, ref in [("<", np.less), ("<=", np.less_equal), (">", np.greater), ("==", np.equal)]:
        fn = lambda x, y, op=op: tir.Binary(op, x, y)  # noqa: E731
        np.testing.assert_array_equal(both(fn, [dtype] * 2, "bool", a, b, lanes=lanes),
                                      ref(a, b), err_msg=op)


def test_unsigned_difference_wraps_before_it_is_compared_or_divided():
    a = np.array([1, 5, 0, 2**32 - 1] * 8, "uint32")
    b = np.array([2, 3, 1, 0] * 8, "uint32")
    with np.errstate(over="ignore"):
        d = a - b
    np.testing.assert_array_equal(both(lambda x, y: (x - y) > x, ["uint32"] * 2, "bool", a, b),
                                  d > a)
    np.testing.assert_array_equal(both(lambda x, y: (x - y) // tir.const(7, "uint32"),
                                       ["uint32"] * 2, "uint32", a, b, lanes=8), d // 7)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("src", NEW + ["int8", "int64"])
@pytest.mark.parametrize("dst", NEW + ["int32", "float32", "float64"])
def test_casts_like_numpy(src, dst, lanes):
    a = data(src)
    np.testing.assert_array_equal(both(lambda x: cast(dst, x), [src], dst, a, lanes=lanes),
                                  a.astype(dst), err_msg=f"{src} -> {dst}")


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dst", NEW)
def test_float_to_unsigned_and_int16_truncates_toward_zero(dst, lanes):
    info = np.iinfo(dst)
    top = float(info.max) if info.bits < 64 else 2.0**64 - 2048.0
    x = np.linspace(float(info.min), top, N)
    x[:3] = [2.9, 0.5, float(info.max // 2) + 0.75]
    np.testing.assert_array_equal(both(lambda v: cast(dst, v), ["float64"], dst, x, lanes=lanes),
                                  x.astype(dst))


def test_uint64_above_two_to_the_63_converts_to_float():
    a = np.array([2**63, 2**64 - 1, 2**63 + 2**40, 1] * 8, "uint64")
    np.testing.assert_array_equal(both(lambda x: cast("float64", x), ["uint64"], "float64", a),
                                  a.astype("float64"))
