"""Integer ``//`` and ``%`` by zero and by negative operands: compiled code, the interpreter and
the simplifier give one answer, numpy's (``x // 0 == x % 0 == 0``)."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.tir import Binary, Buffer, BufferStore, Const, PrimFunc, const, interpret, seq
from mlcbook.tir.simplify import simplify

from ._util import map_func

LANES = [None, 16]
OPS = {"//": np.floor_divide, "%": np.mod}


def _operands(dtype):
    """Every sign combination, zero divisors, and the extremes of ``dtype`` (32 of each)."""
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    pairs = [(7, 0), (-7, 0), (0, 0), (lo, 0), (hi, 0), (7, 2), (-7, 2), (7, -2), (-7, -2),
             (-8, 2), (8, -2), (-1, 5), (1, -5), (0, -3), (lo, -1), (lo, 1), (hi, -1), (lo, 3),
             (hi, -3), (lo, lo), (hi, lo), (lo, hi), (-5, -5), (5, 5), (3, 7), (-3, 7), (3, -7),
             (-3, -7), (lo + 1, -1), (-100, 0), (100, -100), (1, 0)]
    x = np.array([a for a, _ in pairs], dtype)
    y = np.array([b for _, b in pairs], dtype)
    return x, y


def _numpy(op, x, y):
    with np.errstate(divide="ignore", over="ignore"):
        return OPS[op](x, y)


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("op", ["//", "%"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_compiled_and_interpreted_division_agree_with_numpy(dtype, op, lanes):
    x, y = _operands(dtype)
    func = map_func(lambda a, b: Binary(op, a, b), [dtype] * 2, dtype, n=x.shape[0],
                    lanes=lanes)
    compiled = mb.build(func)(x, y)
    interpreted = np.zeros_like(x)
    interpret(func, x, y, interpreted)
    expected = _numpy(op, x, y)
    np.testing.assert_array_equal(interpreted, expected)
    np.testing.assert_array_equal(compiled, expected)
    assert not compiled[y == 0].any()


@pytest.mark.parametrize("lanes", LANES)
@pytest.mark.parametrize("c", [0, -1, -3, 3])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_division_by_a_constant_agrees_everywhere(dtype, c, lanes):
    x, _ = _operands(dtype)
    for op in ("//", "%"):
        func = map_func(lambda a: Binary(op, a, const(c, dtype)), [dtype], dtype,
                        n=x.shape[0], lanes=lanes)
        compiled = mb.build(func)(x)
        interpreted = np.zeros_like(x)
        interpret(func, x, interpreted)
        expected = _numpy(op, x, np.full_like(x, c))
        np.testing.assert_array_equal(interpreted, expected, err_msg=f"x {op} {c}")
        np.testing.assert_array_equal(compiled, expected, err_msg=f"x {op} {c}")


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_simplifier_folds_constants_as_compiled_code_computes(dtype):
    x, y = _operands(dtype)
    n = x.shape[0]
    out_q, out_r = Buffer("Q", (n,), dtype), Buffer("R", (n,), dtype)
    stores, folded = [], {"//": [], "%": []}
    for k, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
        for op, out in (("//", out_q), ("%", out_r)):
            e = Binary(op, const(a, dtype), const(b, dtype))
            s = simplify(e)
            # an unfoldable quotient (INT_MIN // -1 overflows) stays an expression
            folded[op].append(s.value if isinstance(s, Const) else None)
            stores.append(BufferStore(out, e, (k,)))
    func = PrimFunc("consts", (out_q, out_r), seq(*stores), num_outputs=2)
    compiled_q, compiled_r = mb.build(func)()
    for op, got in (("//", compiled_q), ("%", compiled_r)):
        expected = _numpy(op, x, y)
        np.testing.assert_array_equal(got, expected, err_msg=op)
        for k, value in enumerate(folded[op]):
            if value is not None:
                assert value == expected[k], (op, x[k], y[k])
    assert folded["//"].count(None) == 1  # only INT_MIN // -1
