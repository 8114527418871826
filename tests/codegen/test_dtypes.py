"""Every dtype, operator, cast and math function, compiled scalar and vectorized, against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import tir
from mlcbook.tir import Var, cast, const, select

from ._util import map_func

RNG = np.random.default_rng(3)
LANES = [None, 16]
N = 64


def data(dtype, n=N, lo=-50, hi=50):
    if dtype == "bool":
        return RNG.integers(0, 2, n).astype(bool)
    if dtype.startswith("float"):
        return (RNG.standard_normal(n) * 4).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(max(lo, info.min), min(hi, info.max) + 1, n).astype(dtype)


def run(fn, in_dtypes, out_dtype, *arrays, lanes=None):
    k = mb.build(map_func(fn, in_dtypes, out_dtype, n=arrays[0].shape[0], lanes=lanes))
    return k(*arrays)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64", "float16", "float32",
                                   "float64"])
def test_arithmetic_of_every_numeric_dtype(dtype, lanes):
    a, b = data(dtype), data(dtype)
    for name, fn, ref in [("add", lambda x, y: x + y, np.add),
                          ("sub", lambda x, y: x - y, np.subtract),
                          ("mul", lambda x, y: x * y, np.multiply),
                          ("min", tir.min, np.minimum), ("max", tir.max, np.maximum)]:
        with np.errstate(over="ignore"):
            expected = ref(a, b)
        got = run(fn, [dtype, dtype], dtype, a, b, lanes=lanes)
        np.testing.assert_array_equal(got, expected, err_msg=f"{name} {dtype}")


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_float_division_and_negation(dtype, lanes):
    a, b = data(dtype), data(dtype)
    b[b == 0] = 1
    np.testing.assert_array_equal(run(lambda x, y: x / y, [dtype, dtype], dtype, a, b,
                                      lanes=lanes), a / b)
    np.testing.assert_array_equal(run(lambda x: -x, [dtype], dtype, a, lanes=lanes), -a)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_floor_division_and_modulo_like_numpy(dtype, lanes):
    a, b = data(dtype), data(dtype, lo=-7, hi=7)
    b[:4] = 0  # x // 0 and x % 0 are 0, as numpy gives (no crash)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(run(lambda x, y: x // y, [dtype] * 2, dtype, a, b,
                                          lanes=lanes), a // b)
        np.testing.assert_array_equal(run(lambda x, y: x % y, [dtype] * 2, dtype, a, b,
                                          lanes=lanes), a % b)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("c", [3, -3, 8, -1])
def test_integer_division_by_constants(c, lanes):
    a = data("int32", lo=-1000, hi=1000)
    np.testing.assert_array_equal(run(lambda x: x // c, ["int32"], "int32", a, lanes=lanes), a // c)
    np.testing.assert_array_equal(run(lambda x: x % c, ["int32"], "int32", a, lanes=lanes), a % c)


def test_int_min_divided_by_minus_one_wraps_instead_of_trapping():
    a = np.full(N, np.iinfo("int32").min, "int32")
    b = np.full(N, -1, "int32")
    with np.errstate(over="ignore"):
        expected = a // b
    np.testing.assert_array_equal(run(lambda x, y: x // y, ["int32"] * 2, "int32", a, b), expected)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8", "bool"])
def test_comparisons(dtype, lanes):
    a, b = data(dtype), data(dtype)
    b[:8] = a[:8]
    for op, ref in [("==", np.equal), ("!=", np.not_equal), ("<", np.less),
                    ("<=", np.less_equal), (">", np.greater), (">=", np.greater_equal)]:
        fn = lambda x, y, op=op: tir.Binary(op, x, y)  # noqa: E731
        np.testing.assert_array_equal(run(fn, [dtype] * 2, "bool", a, b, lanes=lanes), ref(a, b),
                                      err_msg=op)


def test_float_comparisons_with_nan_follow_numpy():
    a = np.array([np.nan, 1.0, np.nan, 2.0] * 16, "float32")
    b = np.array([np.nan, np.nan, 1.0, 2.0] * 16, "float32")
    for op, ref in [("==", np.equal), ("!=", np.not_equal), ("<", np.less)]:
        fn = lambda x, y, op=op: tir.Binary(op, x, y)  # noqa: E731
        np.testing.assert_array_equal(run(fn, ["float32"] * 2, "bool", a, b, lanes=16), ref(a, b))


def test_float_min_max_propagate_nan_like_numpy():
    a = np.array([np.nan, 1.0, 3.0, -1.0] * 16, "float32")
    b = np.array([0.0, np.nan, 2.0, -2.0] * 16, "float32")
    np.testing.assert_array_equal(run(tir.max, ["float32"] * 2, "float32", a, b), np.maximum(a, b))
    np.testing.assert_array_equal(run(tir.min, ["float32"] * 2, "float32", a, b, lanes=16),
                                  np.minimum(a, b))


@pytest.mark.parametrize("lanes", LANES)
def test_bool_logic(lanes):
    a, b = data("bool"), data("bool")
    np.testing.assert_array_equal(run(lambda x, y: x & y, ["bool"] * 2, "bool", a, b, lanes=lanes),
                                  a & b)
    np.testing.assert_array_equal(run(lambda x, y: x | ~y, ["bool"] * 2, "bool", a, b,
                                      lanes=lanes), a | ~b)


CASTS = [("float32", "int32"), ("float64", "int64"), ("int32", "float32"), ("int32", "int8"),
         ("int32", "int64"), ("int64", "int32"), ("uint8", "int32"), ("int8", "int32"),
         ("uint8", "float32"), ("int32", "uint8"), ("float32", "float16"), ("float16", "float64"),
         ("float32", "float64"), ("float64", "float32"), ("bool", "int32"), ("bool", "float32"),
         ("int32", "bool"), ("float32", "bool"), ("float32", "uint8"), ("float64", "float16"),
         ("int32", "float16"), ("int64", "float16"), ("float16", "int32")]


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("src,dst", CASTS, ids=lambda x: x)
def test_casts_like_numpy(src, dst, lanes):
    a = data(src)
    if src.startswith("float") and dst == "uint8":
        a = np.abs(a)  # negative floats -> uint8 is undefined in C and numpy alike
    a[:2] = 0
    with np.errstate(invalid="ignore"):
        expected = a.astype(dst)
    np.testing.assert_array_equal(run(lambda x: cast(dst, x), [src], dst, a, lanes=lanes), expected)


@pytest.mark.parametrize("lanes", LANES)
def test_select_and_constants_of_every_dtype(lanes):
    for dtype in ["int8", "uint8", "int32", "int64", "float16", "float32", "float64"]:
        a = data(dtype)
        fn = lambda x, dt=dtype: select(x > const(0, dt), x, const(1, dt))  # noqa: E731
        np.testing.assert_array_equal(run(fn, [dtype], dtype, a, lanes=lanes),
                                      np.where(a > 0, a, 1).astype(dtype), err_msg=dtype)


def test_select_reads_only_the_branch_it_takes():
    # Out[i] = A[i - 1] if i > 0 else 0: the false branch must not load A[-1]. Marked
    # lowered, so that code generation meets the select (lowering would cut the loop at i = 1)
    A, out = tir.Buffer("A", (N,)), tir.Buffer("Out", (N,))
    i = Var("i")
    body = tir.For(i, N, tir.BufferStore(out, select(i > 0, A[tir.max(i - 1, 0) * 0 + i - 1],
                                                     const(0.0, "float32")), (i,)))
    k = mb.build(tir.PrimFunc("shift", (A, out), body, attrs={"lowered": True}))
    assert "sel.then" in k.llvm_ir()
    a = data("float32")
    np.testing.assert_array_equal(k(a), np.concatenate([[0], a[:-1]]))


MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda v: 1 / np.sqrt(v),
        "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "erf": np.vectorize(math.erf, otypes=["float64"]), "abs": np.abs, "floor": np.floor,
        "ceil": np.ceil}
TOL = {"float16": dict(rtol=2e-3, atol=1e-3), "float32": dict(rtol=2e-6, atol=1e-7),
       "float64": dict(rtol=1e-13, atol=1e-15)}


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(MATH))
def test_math_functions_match_numpy(name, dtype, lanes):
    a = data(dtype)
    if name in ("log", "sqrt", "rsqrt"):
        a = np.abs(a) + dtype_one(dtype) / 4
    fn = getattr(tir, name)
    got = run(fn, [dtype], dtype, a, lanes=lanes)
    with np.errstate(over="ignore"):  # float16 exp overflows to inf, as it should
        expected = MATH[name](a.astype("float64")).astype(dtype).astype("float64")
    np.testing.assert_allclose(got.astype("float64"), expected, **TOL[dtype])


def dtype_one(dtype):
    return np.ones((), dtype)


@pytest.mark.parametrize("lanes", LANES)
def test_pow_and_integer_abs(lanes):
    a = np.abs(data("float32")) + 0.5
    b = data("float32") / 4
    np.testing.assert_allclose(run(tir.pow, ["float32"] * 2, "float32", a, b, lanes=lanes),
                               np.power(a.astype("float64"), b), rtol=2e-6)
    i = data("int32")
    np.testing.assert_array_equal(run(tir.abs, ["int32"], "int32", i, lanes=lanes), np.abs(i))


def test_fastmath_only_when_asked():
    f = map_func(lambda x, y: x * y + x, ["float32"] * 2, "float32", lanes=16)
    assert " fast " not in mb.build(f).llvm_ir()
    assert "fmul fast <16 x float>" in mb.build(f, fastmath=True).llvm_ir()


@pytest.mark.parametrize("lanes", LANES)
def test_and_or_do_not_evaluate_a_guarded_load(lanes):
    # Out[i] = (i < 8 and A[i] > 0) or (i >= 60 and A[i - 60] > 0), A has 8 elements
    A, out = tir.Buffer("A", (8,)), tir.Buffer("Out", (N,), "bool")
    i = Var("i")
    cond = ((i < 8) & (A[tir.min(i, 7) * 0 + i] > 0.0)) | \
        ((i >= 60) & (A[i - 60] > 0.0))
    if lanes is None:
        body = tir.For(i, N, tir.BufferStore(out, cond, (i,)))
    else:
        body = tir.For(i, N, tir.BufferStore(out, cond, (i,)), "vectorized")
    k = mb.build(tir.PrimFunc("guard", (A, out), body))
    a = data("float32", 8)
    want = np.zeros(N, bool)
    want[:8] = a > 0
    want[60:] = a[:4] > 0
    np.testing.assert_array_equal(k(a), want)
