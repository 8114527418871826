"""evaluate_expr, the whole-array evaluator, against the scalar semantics of tir/scalar.py:
the same value for every math function on ordinary and special inputs, and the IR's rules
for division by zero, wrapping, casts and NaN."""
import math

import numpy as np
import pytest

from mlcbook.errors import TIRError
from mlcbook.tir import expr as E
from mlcbook.tir.array_eval import ARRAY_IMPL, evaluate_expr
from mlcbook.tir.expr import BIT_FUNCS, MATH_FUNCS
from mlcbook.tir.scalar import MATH_IMPL

SPECIAL = [-1e30, -710.0, -3.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.5, 3.5, 710.0, 1e30,
           math.inf, -math.inf, math.nan]


def test_the_array_table_has_every_function_of_the_scalar_table():
    assert set(ARRAY_IMPL) == set(MATH_IMPL) == set(MATH_FUNCS) | set(BIT_FUNCS)


@pytest.mark.parametrize("name", sorted(n for n, k in MATH_FUNCS.items() if k == 1))
def test_a_unary_math_function_agrees_with_the_scalar_semantics(name):
    x = E.var("x", "float64")
    got = evaluate_expr(getattr(E, name)(x), {x: np.array(SPECIAL)})
    want = np.array([MATH_IMPL[name](v) for v in SPECIAL])
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_pow_agrees_with_the_scalar_semantics_on_special_pairs():
    a, b = E.var("a", "float64"), E.var("b", "float64")
    xs, ys = np.meshgrid(SPECIAL, [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, math.inf, math.nan])
    got = evaluate_expr(E.pow(a, b), {a: xs, b: ys})
    with np.errstate(all="ignore"):
        want = np.vectorize(MATH_IMPL["pow"])(xs, ys)
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


def test_integer_floor_division_and_modulo_by_zero_give_zero():
    i, j = E.var("i"), E.var("j")
    env = {i: np.array([-7, 7, 5], "int32"), j: np.array([2, 0, -3], "int32")}
    assert evaluate_expr(i // j, env).tolist() == [-4, 0, -2]
    assert evaluate_expr(i % j, env).tolist() == [1, 0, -1]


def test_integer_arithmetic_wraps_in_its_dtype():
    i = E.var("i", "int8")
    assert evaluate_expr(i * E.const(2, "int8"), {i: np.array([100, -100], "int8")}).tolist() \
        == [-56, 56]


def test_float_arithmetic_rounds_to_its_dtype_at_every_step():
    x = E.var("x", "float32")
    # 1 + 1e-8 is 1 in float32: the difference vanishes, as in the compiled code
    got = evaluate_expr((x + E.const(1e-8, "float32")) - x, {x: np.array([1.0], "float32")})
    assert got.tolist() == [0.0]


def test_casts_truncate_toward_zero_and_min_max_propagate_nan():
    x = E.var("x", "float32")
    assert evaluate_expr(E.cast("int32", x), {x: np.array([-2.7, 2.7])}).tolist() == [-2, 2]
    got = evaluate_expr(E.max(x, E.const(0.0, "float32")), {x: np.array([np.nan, -1.0])})
    assert np.isnan(got[0]) and got[1] == 0.0


def test_an_unbound_variable_is_named():
    x = E.var("x", "float32")
    with pytest.raises(TIRError, match="the variable 'x' has no value"):
        evaluate_expr(x + E.const(1.0, "float32"), {})
