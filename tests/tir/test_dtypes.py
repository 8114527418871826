"""The dtype table of the loop IR: ranges, unsigned semantics in the reference evaluator
and the interpreter (operands wrap before they compare or divide), bfloat16 rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import DTypeMismatchError
from mlcbook.tir import Buffer, BufferStore, For, PrimFunc, Var, cast, const
from mlcbook.tir.expr import DTYPES, INT_DTYPES, bits, int_range, is_unsigned
from mlcbook.tir.scalar import POISON, round_bf16

RUNNERS = {"interpret": mb.tir.interpret, "evaluate": mb.tir.evaluate}


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_int_range_and_bits_match_numpy(dtype):
    info = np.iinfo(dtype)
    assert int_range(dtype) == (info.min, info.max)
    assert bits(dtype) == info.bits
    assert is_unsigned(dtype) == (info.min == 0)


def test_every_dtype_is_a_numpy_dtype_bfloat16_included():
    assert [np.dtype(d).name for d in DTYPES] == list(DTYPES)
    assert np.dtype("bfloat16") == ml_dtypes.bfloat16


def test_unsigned_constants_reach_their_maximum_and_no_further():
    assert const(2**64 - 1, "uint64").value == 2**64 - 1
    with pytest.raises(DTypeMismatchError, match=r"does not fit uint64 \(\[0, 18446744073709551615\]\)"):
        const(2**64, "uint64")
    with pytest.raises(DTypeMismatchError, match="does not fit uint32"):
        const(-1, "uint32")


def test_poison_is_the_unsigned_maximum():
    assert POISON["uint16"] == 65535 and POISON["uint64"] == 2**64 - 1
    assert POISON["int16"] == -32768


def _map(fn, in_dtype, out_dtype, n):
    A, B, i = Buffer("A", (n,), in_dtype), Buffer("B", (n,), out_dtype), Var("i")
    return PrimFunc("f", (A, B), For(i, n, BufferStore(B, fn(A[i]), (i,))))


@pytest.mark.parametrize("runner", RUNNERS)
def test_unsigned_difference_wraps_before_compare_and_divide(runner):
    a = np.array([1, 3, 0, 2**32 - 1], np.uint32)
    two = const(2, "uint32")
    out = np.zeros(4, bool)
    RUNNERS[runner](_map(lambda x: (x - two) > x, "uint32", "bool", 4), a, out)
    np.testing.assert_array_equal(out, [True, False, True, False])
    q = np.zeros(4, np.uint32)
    RUNNERS[runner](_map(lambda x: (x - two) // const(3, "uint32"), "uint32", "uint32", 4), a, q)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(q, (a - np.uint32(2)) // np.uint32(3))


@pytest.mark.parametrize("runner", RUNNERS)
def test_signed_to_wider_unsigned_cast_sign_extends_then_wraps(runner):
    a = np.array([-1, -128, 5, 127], np.int8)
    out = np.zeros(4, np.uint64)
    RUNNERS[runner](_map(lambda x: cast("uint64", x), "int8", "uint64", 4), a, out)
    np.testing.assert_array_equal(out, a.astype(np.uint64))


def test_round_bf16_matches_ml_dtypes_ties_and_extremes():
    x = np.random.default_rng(0).standard_normal(2000).astype(np.float32) * np.float32(1e4)
    x = np.concatenate([x, np.float32([1 + 2**-8, 1 + 3 * 2**-8, np.finfo(np.float32).max,
                                       -0.0, np.inf, 1e-41])])
    want = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    np.testing.assert_array_equal([round_bf16(float(v)) for v in x], want)
    assert np.isnan(round_bf16(float("nan")))


@pytest.mark.parametrize("runner", RUNNERS)
def test_bfloat16_store_rounds_float32_arithmetic(runner):
    a = np.array([1.0, 3.0, 255.0, -0.1], ml_dtypes.bfloat16)
    out = np.zeros(4, ml_dtypes.bfloat16)
    RUNNERS[runner](_map(lambda x: x / const(3.0, "bfloat16"), "bfloat16", "bfloat16", 4), a,
                    out)
    want = (a.astype(np.float32) / np.float32(3.0)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))
