"""Round trip, checked over generated programs: ``parse(str(f))`` is ``f`` and prints the same."""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings

from mlcbook.script import parse
from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, Cast, Const, Evaluate,
                         IRModule, PrimFunc, Range, Unary, assert_structural_equal,
                         root_block_realize, verify)

from ._programs import prim_funcs

_SETTINGS = settings(max_examples=300, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(prim_funcs())
def test_function_round_trip(func):
    verify(func)  # the generator makes well-formed programs only
    text = str(func)
    back = parse(text)
    assert_structural_equal(back, func)
    assert str(back) == text


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prim_funcs(depth=2), prim_funcs(depth=2))
def test_module_round_trip(f, g):
    mod = IRModule({"main": f, "other": g})
    text = str(mod)
    back = parse(text)
    assert isinstance(back, IRModule)
    assert_structural_equal(back, mod)
    assert str(back) == text


_REGION_LINE = re.compile(r"^\s*T\.(reads|writes)\(.*\)$")


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(prim_funcs())
def test_inferred_regions_round_trip(func):
    # without T.reads/T.writes the parser infers the regions; the result prints and reads back
    lines = str(func).split("\n")
    text = "\n".join(line for line in lines if not _REGION_LINE.match(line))
    inferred = parse(text)
    again = parse(str(inferred))
    assert_structural_equal(again, inferred)
    assert str(again) == str(inferred)


def _regressions():
    """Programs the property tests once found wrong, kept as plain examples."""
    A = Buffer("A", (4,), "float32")
    nan_min = Cast("int32", Const(math.nan, "float32"))
    region = BufferRegion(A, (Range(nan_min, Const(1, "int64")),))
    blk = Block("b", (), (region,), (), Evaluate(Const(0, "int32")))
    yield PrimFunc("nan_region", (A,), root_block_realize(BlockRealize((), True, blk)))
    neg = Unary("-", Const(-1, "int32"))   # `--1`, not the constant 1
    yield PrimFunc("neg", (A,), root_block_realize(Evaluate(neg)), num_outputs=0)
    yield PrimFunc("for", (A,), root_block_realize(Evaluate(Const(0, "int32"))))
    yield PrimFunc("attrs", (A,), root_block_realize(Evaluate(Const(0, "int32"))),
                   attrs={"\x85\u2028": "line\nbreaks"})


@pytest.mark.parametrize("func", list(_regressions()), ids=lambda f: f.name)
def test_regressions_round_trip(func):
    text = str(func)
    back = parse(text)
    assert_structural_equal(back, func)
    assert str(back) == text


def test_bitwise_functions_and_reinterpret_round_trip():
    from mlcbook import te
    from mlcbook.tir.expr import bitwise_xor, reinterpret
    a = te.placeholder((4,), name="a")
    bits = te.compute((4,), lambda i: bitwise_xor(reinterpret("int32", a[i]), 1), name="bits")
    func = te.create_prim_func([a, bits])
    text = str(func)
    assert 'T.bitwise_xor(T.reinterpret("int32", a[vi]), 1)' in text
    back = parse(text)
    assert_structural_equal(back, func)
    assert str(back) == text


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64"])
def test_new_dtypes_round_trip(dtype):
    from mlcbook.tir import BufferStore, For, Var, cast, const
    A, B, i = Buffer("A", (4,), dtype), Buffer("B", (4,), "bfloat16"), Var("i")
    top = 2 ** (int(dtype.lstrip("uint")) - 2)  # a large value, printed in full
    f = PrimFunc("f", (A, B), For(i, 4, BufferStore(
        B, cast("bfloat16", A[i] + const(top, dtype)) * const(0.5, "bfloat16"), (i,))))
    text = str(f)
    assert f'T.{dtype}({top})' in text and "T.bfloat16(0.5)" in text
    back = parse(text)
    assert_structural_equal(back, f)
    assert str(back) == text
