"""Integer semantics of the loop IR (wrapping casts, int32 accumulation, saturate,
round_half_even), the same in the interpreter, the reference evaluator and native code,
and equal to numpy's."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.tir import BlockRealize, Buffer, Const, For, IterVar, PrimFunc, Var
from mlcbook.tir import round_half_even, saturate
from mlcbook.tir.stmt import Block, BufferRegion, BufferStore
from mlcbook.tir.function import root_block_realize

RUNNERS = {"interpret": mb.tir.interpret, "evaluate": mb.tir.evaluate,
           "native": lambda f, *a: mb.build(f)(*a)}


def elementwise(src_dtype, dst_dtype, fn, n):
    A, B = Buffer("A", (n,), src_dtype), Buffer("B", (n,), dst_dtype)
    i, vi = Var("i"), Var("vi")
    block = Block("B", (IterVar(vi, n),), (BufferRegion.full(A),), (BufferRegion.full(B),),
                  BufferStore(B, fn(A[vi]), (vi,)))
    body = For(i, n, BlockRealize((i,), Const(True, "bool"), block))
    return PrimFunc("f", (A, B), root_block_realize(body))


def run(func, x, runner):
    out = np.zeros(func.params[-1].shape, func.params[-1].dtype)
    RUNNERS[runner](func, x, out)
    return out


INTS = np.array([127, 128, -129, 300, -1, 255, -100000, 100000], np.int32)
FLOATS = np.array([2.5, 3.5, -2.5, -0.5, 1.4999, 0.5, 126.7, -300.2], np.float32)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "uint32", "uint64"])
def test_integer_cast_wraps_like_numpy(runner, dtype):
    f = elementwise("int32", dtype, lambda x: mb.tir.cast(dtype, x), len(INTS))
    np.testing.assert_array_equal(run(f, INTS, runner), INTS.astype(dtype))


@pytest.mark.parametrize("runner", RUNNERS)
def test_float_cast_truncates_toward_zero(runner):
    f = elementwise("float32", "int32", lambda x: mb.tir.cast("int32", x), len(FLOATS))
    np.testing.assert_array_equal(run(f, FLOATS, runner), np.trunc(FLOATS).astype(np.int32))


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint16", "uint32"])
def test_saturate_clamps_integers(runner, dtype):
    f = elementwise("int32", dtype, lambda x: saturate(dtype, x), len(INTS))
    info = np.iinfo(dtype)
    np.testing.assert_array_equal(run(f, INTS, runner),
                                  np.clip(INTS, info.min, info.max).astype(dtype))


@pytest.mark.parametrize("runner", RUNNERS)
def test_round_half_even_is_rint(runner):
    f = elementwise("float32", "float32", round_half_even, len(FLOATS))
    np.testing.assert_array_equal(run(f, FLOATS, runner), np.rint(FLOATS))


@pytest.mark.parametrize("runner", RUNNERS)
def test_quantize_rounds_then_saturates(runner):
    f = elementwise("float32", "int8", lambda x: saturate("int8", round_half_even(x)),
                    len(FLOATS))
    want = np.clip(np.rint(FLOATS), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(run(f, FLOATS, runner), want)


@pytest.mark.parametrize("runner", RUNNERS)
def test_int32_sum_wraps_like_numpy(runner):
    f = elementwise("int32", "int32", lambda x: x * 65536, len(INTS))
    with np.errstate(over="ignore"):
        want = INTS * np.int32(65536)
    np.testing.assert_array_equal(run(f, INTS, runner), want)


@pytest.mark.parametrize("runner", RUNNERS)
def test_saturate_from_unsigned_clamps_only_what_can_exceed(runner):
    x = np.array([0, 5, 2**31 - 1, 2**31, 2**32 - 1], np.uint32)
    f = elementwise("uint32", "int32", lambda v: saturate("int32", v), len(x))
    np.testing.assert_array_equal(run(f, x, runner), [0, 5, 2**31 - 1, 2**31 - 1, 2**31 - 1])


def test_saturate_names_integer_dtypes_only():
    with pytest.raises(mb.MLCError, match="integer dtype, got 'float32'"):
        saturate("float32", Const(1, "int32"))
