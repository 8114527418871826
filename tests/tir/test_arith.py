"""tir.arith: values, linear and affine forms, regions."""
import numpy as np
import pytest

from mlcbook.tir import Var, cast, const
from mlcbook.tir.arith import (Atoms, Linear, affine, int_bounds, int_values, linear,
                               provably_le, relax, union)


def test_an_array_binding_evaluates_every_point():
    i = Var("i")
    np.testing.assert_array_equal(int_values(i // 4 * 10 + i % 4, {i: np.arange(6)}),
                                  [0, 1, 2, 3, 10, 11])


def test_division_by_zero_is_zero_and_floors_negatives():
    i = Var("i")
    np.testing.assert_array_equal(int_values((i - 2) // (i - 1), {i: np.arange(4)}),
                                  [2, 0, 0, 0])
    assert int_values((i - 3) % 2, {i: 0}) == 1


def test_a_variable_without_a_value_is_an_error():
    i, j = Var("i"), Var("j")
    with pytest.raises(ValueError, match="j has no value"):
        int_values(i + j, {i: 1})


# --- linear forms ------------------------------------------------------------------------------
def test_a_linear_form_cancels_equal_atoms():
    i, j = Var("i"), Var("j")
    f = linear(i * 8 + j - i * 8 + 3)
    assert f.coeffs == {j: 1} and f.const == 3
    assert str(f.to_expr()) == "j + 3"


def test_non_linear_pieces_are_atoms_shared_by_equal_expressions():
    i = Var("i")
    f = linear(i // 4 * 2 + (i // 4) * 3)
    assert [(c, str(a)) for a, c in f.coeffs.items()] == [(5, "i // 4")]


def test_bounds_add_each_terms_extreme():
    i, j = Var("i"), Var("j")
    assert linear(i * 4 - j + 1).bounds({i: (0, 3), j: (0, 7)}) == (-6, 13)
    assert linear(i + j).bounds({i: (0, 3)}) is None


def test_to_expr_puts_positive_terms_first_and_the_constant_last():
    i, j, k = Var("i"), Var("j"), Var("k")
    assert str(Linear([(-1, k), (32, i), (1, j)], const=-4).to_expr()) == "i * 32 + j - k - 4"
    assert str(Linear([(-2, k)], const=5).to_expr()) == "5 - k * 2"
    assert Linear(const=7, dtype="int64").to_expr().dtype == "int64"


def test_to_expr_undoes_the_split_a_fuse_made():
    f = Var("f")
    assert str(linear(f // 16 * 32 + f % 16 * 2).to_expr()) == "f * 2"


def test_to_expr_merges_a_remainder_with_the_quotient_s_remainder():
    f = Var("f")
    assert str(linear(f // 58 % 58 * 928 + f % 58 * 16).to_expr()) == "f % 3364 * 16"


def test_three_fused_loops_index_merges_to_one_variable():
    # fuse(n, y, x) over extents (4, 58, 58) and a 16-lane row: what the pad loops index
    f = Var("f")
    assert str(linear(f // 3364 * 53824 + f // 58 % 58 * 928 + f % 58 * 16 + 3).to_expr()) \
        == "f * 16 + 3"


@pytest.mark.parametrize("make", [
    lambda f: f // 58 % 58 * 900 + f % 58 * 16,     # coefficients not in the ratio 58
    lambda f: f // 58 % 58 * 58 + f % 29,           # remainder by another divisor
    lambda f: f // 29 % 58 * 58 + f % 58,           # quotient by another divisor
    lambda f: f // -4 % 3 * -4 + f % -4,            # negative divisor
    lambda f: f // 4 % -3 * 4 + f % 4,              # negative modulus
    lambda f: f // 4 * 8 + f % 4,                   # quotient's coefficient not k*c
])
def test_div_mod_pairs_that_are_not_the_identity_do_not_merge(make):
    f = Var("f")
    e = make(f)
    merged = linear(e).to_expr()
    assert "%" in str(merged) or "//" in str(merged)
    xs = np.arange(-500, 500)
    np.testing.assert_array_equal(int_values(merged, {f: xs}), int_values(e, {f: xs}))


@pytest.mark.parametrize("make", [
    lambda f: f // 58 % 58 * 928 + f % 58 * 16,
    lambda f: f // 3364 * 53824 + f // 58 % 58 * 928 + f % 58 * 16 - 7,
    lambda f: f // 4 % 3 * 12 + f % 4 * 3 + f // 12 * 36,
    lambda f: f // 4 * -8 + f % 4 * -2,
])
def test_merged_div_mod_pairs_keep_their_value_for_negative_numbers_too(make):
    f = Var("f")
    e = make(f)
    merged = linear(e).to_expr()
    assert str(merged).count("%") + str(merged).count("//") < str(e).count("%") \
        + str(e).count("//")
    xs = np.arange(-20000, 20000, 7)
    np.testing.assert_array_equal(int_values(merged, {f: xs}), int_values(e, {f: xs}))


def test_split_separates_multiples_of_the_divisor():
    i, j = Var("i"), Var("j")
    q, r = linear(i * 8 + j * 3 + 13).split(4)
    assert str(q.to_expr()) == "i * 2 + 3" and str(r.to_expr()) == "j * 3 + 1"


def test_casts_are_looked_through_only_when_asked():
    i = Var("i")
    e = cast("int64", i * 2) + const(1, "int64")
    assert len(linear(e).terms) == 1 and str(next(iter(linear(e).coeffs))) != "i"
    assert linear(e, casts=True).coeffs == {i: 2}


# --- affine forms and regions ------------------------------------------------------------------
def test_affine_refuses_division_without_atoms():
    i, j = Var("i"), Var("j")
    assert affine(i * 32 + j).coeffs == {i: 32, j: 1}
    assert affine(i // 4 + j) is None


def test_atoms_name_a_division_once_with_its_bounds():
    i, j = Var("i"), Var("j")
    ranges = {i: (0, 63)}
    atoms = Atoms(ranges)
    a, b = affine(i // 4 + j, atoms), affine(i // 4 * 2, atoms)
    (atom,) = [v for v in a.coeffs if v is not j]
    assert b.coeffs == {atom: 2}
    assert ranges[atom] == (0, 15) and str(atoms.exprs[atom]) == "i // 4"


def test_atoms_are_refused_over_relaxed_variables():
    i, ii = Var("i"), Var("ii")
    atoms = Atoms({i: (0, 7), ii: (0, 7)})
    assert affine((i * 8 + ii) // 4, atoms, relaxed={ii: (0, 7)}) is None
    assert affine((i * 8 + ii) // 4, atoms) is not None


def test_relax_keeps_the_fixed_loops_symbolic():
    i0, ii = Var("i0"), Var("ii")
    lo, hi = relax(i0 * 32 + ii, {ii: (0, 31)}, {i0: (0, 3), ii: (0, 31)})
    assert (str(lo.to_expr()), str(hi.to_expr())) == ("i0 * 32", "i0 * 32 + 31")


def test_relax_falls_back_to_constant_bounds():
    i0, ii = Var("i0"), Var("ii")
    lo, hi = relax((i0 * 32 + ii) // 8, {ii: (0, 31)}, {i0: (0, 3), ii: (0, 31)})
    assert (lo.is_const(), lo.const, hi.const) == (True, 0, 15)
    assert relax(Var("n") // 2, {ii: (0, 31)}, {}) is None


def test_union_keeps_affine_ends_when_they_differ_by_a_constant():
    i = Var("i")
    x = (linear(i * 4), linear(i * 4 + 3))
    y = (linear(i * 4 + 1), linear(i * 4 + 5))
    lo, hi = union(x, y, {i: (0, 7)})
    assert (str(lo.to_expr()), str(hi.to_expr())) == ("i * 4", "i * 4 + 5")
    lo, hi = union(x, (linear(i * 2), linear(i * 2)), {i: (0, 7)})
    assert (lo.const, hi.const, lo.is_const()) == (0, 31, True)


def test_provably_le_over_the_ranges():
    i, j = Var("i"), Var("j")
    assert provably_le(linear(i * 4 + j), linear(i * 4 + 3), {j: (0, 3)})
    assert not provably_le(linear(i * 4 + j), linear(i * 4 + 3), {j: (0, 4)})
    assert not provably_le(linear(i), linear(j), {})


def test_the_old_home_of_int_bounds_still_answers_with_a_warning():
    import mlcbook.tir.analysis as analysis
    with pytest.warns(DeprecationWarning, match="moved to mlcbook.tir.arith.int_bounds"):
        assert analysis.int_bounds is int_bounds
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        analysis.nope


def test_a_form_read_through_a_cast_rebuilds_in_its_variables_dtype():
    i = Var("i")
    e = const(3, "int64") + cast("int64", i * 2)
    assert str(linear(e, casts=True).to_expr()) == "i * 2 + 3"
    assert linear(e, casts=True).to_expr().dtype == "int32"
