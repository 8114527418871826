"""matmul and gemm, declared from their te computes, against numpy oracles."""
import numpy as np
import pytest

from mlcbook.errors import OpShapeError
from mlcbook.ops import TensorType, get


def _rand(shape, dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    if dtype.startswith("int"):
        return rng.integers(-4, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("a,b", [((2, 3), (3, 4)), ((8, 1, 4, 5), (3, 5, 6)), ((5,), (5, 6)),
                                 ((2, 4, 5), (5,)), ((5,), (5,))], ids=str)
def test_matmul_is_numpys(a, b):
    x, y = _rand(a), _rand(b, seed=1)
    want = np.matmul(x.astype(np.float64), y.astype(np.float64))
    np.testing.assert_allclose(get("matmul").reference(x, y), want, rtol=1e-5, atol=1e-5)


def test_an_integer_matmul_is_exact():
    x, y = _rand((3, 7), "int32"), _rand((7, 2), "int32", seed=1)
    np.testing.assert_array_equal(get("matmul").reference(x, y), x @ y)


def test_a_matmul_over_nothing_is_zero():
    got = get("matmul").reference(np.zeros((3, 0), "float32"), np.zeros((0, 4), "float32"))
    np.testing.assert_array_equal(got, np.zeros((3, 4)))
    assert get("matmul").infer_type([TensorType((0, 5)), TensorType((5, 2))], {}).shape == (0, 2)


@pytest.mark.parametrize("trans_a,trans_b", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_gemm_is_the_formula(trans_a, trans_b):
    a = _rand((4, 3) if trans_a else (3, 4))
    b = _rand((5, 4) if trans_b else (4, 5), seed=1)
    c = _rand((5,), seed=2)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = 0.5 * ((a64.T if trans_a else a64) @ (b64.T if trans_b else b64)) + 2.0 * c
    got = get("gemm").reference(a, b, c, alpha=0.5, beta=2.0, trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_gemm_over_nothing_is_beta_c():
    got = get("gemm").reference(np.zeros((2, 0), "float32"), np.zeros((0, 3), "float32"),
                                np.array([1.0, 2.0, 3.0], "float32"), beta=2.0)
    np.testing.assert_array_equal(got, [[2, 4, 6], [2, 4, 6]])


def test_gemm_refuses_a_c_that_does_not_broadcast():
    with pytest.raises(OpShapeError,
                       match=r"gemm: shapes \(4,\) and \(2, 5\) cannot be broadcast"):
        get("gemm").infer_type([TensorType((2, 3)), TensorType((3, 5)), TensorType((4,))], {})
