"""The arithmetic simplifier: folding, identities, index algebra; results checked by evaluation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mlcbook.tir import (Binary, Buffer, BufferStore, Const, For, IfThenElse, PrimFunc, Var, cast,
                         const, exp, interpret, max as tmax, min as tmin, select, seq)
from mlcbook.tir.expr import Select
from mlcbook.tir.arith import expr_key
from mlcbook.tir.simplify import simplify, simplify_assuming


def same(a, b):
    """The same expression tree over the very same variables (no renaming)."""
    return expr_key(a) == expr_key(b)


def _eval(e, env):
    """A tiny independent evaluator of integer/bool expressions (floor semantics)."""
    if isinstance(e, Const):
        return e.value
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Select):
        return _eval(e.true_value, env) if _eval(e.cond, env) else _eval(e.false_value, env)
    a, b = _eval(e.a, env), _eval(e.b, env)
    return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0,
            "%": a % b if b else 0, "min": min(a, b), "max": max(a, b), "<": a < b,
            "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b, "!=": a != b,
            "and": a and b, "or": a or b}[e.op]


def _same_everywhere(e, ranges):
    s = simplify(e, ranges)
    vs = list(ranges)
    for vals in itertools.product(*(range(lo, hi + 1) for lo, hi in ranges.values())):
        env = dict(zip(vs, vals))
        assert _eval(s, env) == _eval(e, env), (str(e), str(s), vals)
    return s


i, j, k = Var("i"), Var("j"), Var("k")


def test_constant_folding_of_ints_uses_floor_semantics():
    assert simplify(const(-7) // 2).value == -4
    assert simplify(const(-7) % 2).value == 1
    assert simplify(const(3) * 4 + 5).value == 17


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_division_and_modulo_by_constant_zero_fold_to_zero(dtype):
    for a in (const(7, dtype), const(0, dtype), Var("x", dtype)):
        for op in ("//", "%"):
            s = simplify(Binary(op, a, const(0, dtype)))
            assert isinstance(s, Const) and s.value == 0 and s.dtype == dtype, (op, str(a))


def test_constant_folding_of_negative_operands():
    for dtype in ("int32", "int64"):
        for a, b in [(-7, 2), (7, -2), (-7, -2), (-8, 2), (-1, 5), (1, -5)]:
            assert simplify(const(a, dtype) // const(b, dtype)).value == a // b
            assert simplify(const(a, dtype) % const(b, dtype)).value == a % b


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_min_divided_by_minus_one_is_not_folded(dtype):
    # the exact quotient does not fit the dtype; the interpreter and codegen wrap it
    lo = int(np.iinfo(dtype).min)
    e = const(lo, dtype) // const(-1, dtype)
    assert isinstance(simplify(e), Binary)
    assert simplify(const(lo, dtype) % const(-1, dtype)).value == 0


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_folded_division_agrees_with_the_interpreter(dtype):
    lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    pairs = [(7, 0), (-7, 0), (0, 0), (lo, 0), (hi, 0), (-7, 2), (7, -2), (-7, -2),
             (lo, 1), (lo, 3), (hi, -3), (lo + 1, -1)]
    out = Buffer("Out", (2 * len(pairs),), dtype)
    stores, expected = [], []
    for n, (a, b) in enumerate(pairs):
        for m, op in enumerate(("//", "%")):
            e = Binary(op, const(a, dtype), const(b, dtype))
            folded = simplify(e)
            assert isinstance(folded, Const), str(e)
            expected.append(folded.value)
            stores.append(BufferStore(out, e, (2 * n + m,)))
    got = np.zeros(2 * len(pairs), dtype)
    interpret(PrimFunc("f", (out,), seq(*stores)), got)
    assert got.tolist() == expected


def test_constant_folding_of_float32_rounds_to_float32():
    e = const(0.1, "float32") + const(0.2, "float32")
    assert simplify(e).value == float(np.float32(0.1) + np.float32(0.2))


def test_int_identities():
    assert simplify(i * 1) is i
    assert simplify(i + 0) is i
    assert simplify(0 + i) is i
    assert simplify(i - i).value == 0
    assert simplify(i * 0).value == 0
    assert simplify(i // 1) is i
    assert simplify(i % 1).value == 0


def test_float_identities_only_when_exact():
    x = Var("x", "float32")
    assert simplify(x * 1.0) is x
    assert simplify(x / 1.0) is x
    assert simplify(x - 0.0) is x
    # x + 0.0 turns -0.0 into +0.0, and x * 0.0 is not 0 for inf/nan: both stay
    assert isinstance(simplify(x + 0.0), Binary)
    assert isinstance(simplify(x * 0.0), Binary)


def test_split_then_recombine_division():
    assert simplify((i * 8 + j) // 8, {j: (0, 7)}) is i
    assert simplify((i * 8 + j) % 8, {j: (0, 7)}) is j


def test_division_keeps_remainder_when_bounds_unknown():
    s = simplify((i * 8 + j) // 8)
    assert same(s, i + j // 8)


def test_division_by_bounds():
    assert simplify(j // 8, {j: (0, 7)}).value == 0
    assert simplify(j % 8, {j: (0, 7)}) is j
    assert simplify((j + 8) // 8, {j: (0, 7)}).value == 1


def test_nested_division():
    assert same(simplify(i // 4 // 2), i // 8)
    assert same(simplify(i % 16 % 4), i % 4)


def test_fuse_split_round_trip():
    # fuse(i, j) then split by the inner extent gives back i*8 + j
    f = Var("f")
    e = (f // 8) * 8 + f % 8
    assert simplify(e) is f


def test_linear_cancellation_and_order():
    assert same(simplify((i * 4 + j) * 2 - i * 8), j * 2)
    assert same(simplify(j + i * 3 - 2), j + i * 3 - 2)
    assert same(simplify(7 - i), 7 - i)
    assert same(simplify(i - 3 + j), i + j - 3)


@pytest.mark.parametrize("make", [
    lambda: (i * 6 + j) // 4,
    lambda: (i * 6 + j) % 4,
    lambda: (i * 4 + j * 2 + 1) // 2,
    lambda: (i * 4 + j * 2 + 1) % 6,
    lambda: (i * 12 + j * 4 + k) // 4 % 3,
    lambda: tmin(i * 4 + j, 30) - tmax(j, 2),
    lambda: (i - j) // 3,
    lambda: (j - 5) % 4,
])
def test_rewrites_preserve_value_everywhere(make):
    _same_everywhere(make(), {i: (0, 7), j: (0, 3), k: (0, 3)})


def test_min_max_and_comparisons_by_bounds():
    assert simplify(tmin(j, 8), {j: (0, 7)}) is j
    assert simplify(tmax(j, 8), {j: (0, 7)}).value == 8
    assert simplify(i * 8 + j < 64, {i: (0, 7), j: (0, 7)}).value is True
    assert simplify(i * 8 + j >= 64, {i: (0, 7), j: (0, 7)}).value is False
    cond = simplify(i * 8 + j < 60, {i: (0, 7), j: (0, 7)})
    assert isinstance(cond, Binary) and cond.op == "<"


def test_logic_and_select():
    b = Var("b", "bool")
    assert simplify(b & (i < i + 1)) is b
    assert simplify(b | (i < i)) is b
    assert simplify(~~b) is b
    x = Var("x", "float32")
    assert simplify(select(j < 8, x, 0.0), {j: (0, 7)}) is x


def test_casts_and_calls_fold():
    assert simplify(cast("float32", const(3))).value == 3.0
    assert simplify(cast("int32", const(-2.7, "float32"))).value == -2
    assert abs(simplify(exp(const(1.0, "float32"))).value - 2.7182817) < 1e-6


def test_statement_learns_loop_ranges_and_drops_dead_branch():
    A = Buffer("A", (64,))
    body = IfThenElse(i * 8 + j < 64, BufferStore(A, const(1.0, "float32"), ((i * 8 + j) // 8 * 8 + j,)))
    loop = For(i, 8, For(j, 8, body))
    out = simplify(loop)
    store = out.body.body
    assert isinstance(store, BufferStore)
    assert same(store.indices[0], i * 8 + j)


def test_extent_one_loop_variable_becomes_zero():
    A = Buffer("A", (8,))
    out = simplify(For(i, 1, For(j, 8, BufferStore(A, const(1.0, "float32"), (i * 8 + j,)))))
    assert out.body.body.indices[0] is j


def test_small_int_dtypes_only_fold_constants():
    a = Var("a", "uint8")
    e = a + Const(0, "uint8")
    assert same(simplify(e), e)
    assert simplify(Const(20, "uint8") + Const(100, "uint8")).value == 120
    # 300 does not fit in uint8: left alone rather than folded to a wrong constant
    assert isinstance(simplify(Const(200, "uint8") + Const(100, "uint8")), Binary)


def test_simplify_assuming_drops_the_clamp_its_condition_makes_redundant():
    # a padded read: where the select's condition holds, the clamp is the identity
    cond = (i - 1 >= 0) & (i - 1 < 56) & (8 > j)
    e = tmax(tmin(i - 1, 55), 0) * 58 + tmin(j, 7)
    s = simplify_assuming(e, cond, {j: (0, 100)})
    assert same(s, i * 58 + j - 58)
    for a, b in itertools.product(range(-3, 60), range(0, 12)):
        env = {i: a, j: b}
        if _eval(cond, env):
            assert _eval(s, env) == _eval(e, env), (a, b)


@pytest.mark.parametrize("cond", [i - 1 >= 0, (i * 2 >= 0) & (i * 2 < 56), (i + j >= 1) & (i + j < 57)])
def test_simplify_assuming_keeps_the_clamp_when_the_condition_does_not_bound_the_variable(cond):
    # one-sided, scaled, or on a sum: no range of i follows, so the clamp stays
    e = tmax(tmin(i - 1, 55), 0)
    assert same(simplify_assuming(e, cond), e)


def test_simplify_assuming_drops_a_clamp_on_the_very_expression_its_condition_bounds():
    # a stride-2 pool's padded read: 2*i + j - 1 >= 0 bounds neither i nor j alone, but
    # it is the clamped expression itself
    cond = (i * 2 + j - 1 >= 0) & (i * 2 + j - 1 < 28)
    e = tmax(tmin(i * 2 + j - 1, 27), 0)
    s = simplify_assuming(e, cond)
    assert same(s, i * 2 + j - 1)
    for a, b in itertools.product(range(-3, 16), range(0, 3)):
        env = {i: a, j: b}
        if _eval(cond, env):
            assert _eval(s, env) == _eval(e, env), (a, b)


@pytest.mark.parametrize("cond", [i * 2 + j >= 0, i * 2 - 1 >= 0, i * 2 + j - 1 > -2])
def test_simplify_assuming_keeps_a_clamp_its_condition_does_not_reach(cond):
    # a weaker bound, or one on another expression: 2*i + j - 1 may still be negative
    e = tmax(i * 2 + j - 1, 0)
    assert same(simplify_assuming(e, cond), e)
