"""int_values: integer expressions evaluated at many points at once, with the loop IR's rules."""
import numpy as np
import pytest

from mlcbook.tir import Var
from mlcbook.tir.arith import int_values


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
