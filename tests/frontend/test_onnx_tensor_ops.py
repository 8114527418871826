"""MeanVarianceNormalization against ONNX's own definition: its function body
``(X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9)`` evaluated in float64."""
import functools

import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb


def _mvn(shape, axes):
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=list(axes))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                      list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])


@functools.lru_cache(maxsize=None)
def _compiled(shape, axes):
    return mb.compile(mb.from_onnx(_mvn(shape, axes)), opt_level=0)


def _spec_float64(x, axes):
    """The function body of the ONNX schema (onnx 1.23), in float64."""
    x = x.astype(np.float64)
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = (x ** 2).mean(axis=tuple(axes), keepdims=True) - mean ** 2
    return (x - mean) / (np.sqrt(np.maximum(var, 0)) + 1e-9)


CASES = [((1, 3), (1,)), ((3, 6), (0, 1)), ((2, 5, 1, 1), (0, 2, 3))]


@pytest.mark.parametrize("shape, axes", CASES)
def test_mvn_of_equal_values_is_zero_as_the_spec_says(shape, axes):
    # (3, 6) over both axes: a float32 mean of 18 copies of 0.1 is not 0.1, and unshifted
    # this gave -0.937 (the rounding error divided by itself) where the spec gives 0
    for value in (0.0, 0.1, -1.3, 1.9):
        x = np.full(shape, value, np.float32)
        got = _compiled(shape, axes).run({"x": x})
        np.testing.assert_array_equal(np.asarray(got), _spec_float64(x, axes))


@pytest.mark.parametrize("shape, axes", CASES)
def test_mvn_of_random_values_matches_the_spec(shape, axes):
    x = np.random.default_rng(0).uniform(-2, 2, shape).astype(np.float32)
    got = _compiled(shape, axes).run({"x": x})
    np.testing.assert_allclose(np.asarray(got), _spec_float64(x, axes), rtol=1e-5, atol=1e-6)


def test_mvn_of_values_a_few_ulps_apart_matches_the_spec():
    # the spec's E[X^2] - E[X]^2 in float32 cancels to noise here; shifted deviations are exact
    x = (np.float32(1.5) + np.arange(8, dtype=np.float32) * np.spacing(np.float32(1.5)))
    x = x.reshape(1, 8)
    got = _compiled((1, 8), (1,)).run({"x": x})
    np.testing.assert_allclose(np.asarray(got), _spec_float64(x, (1,)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [2**40, -2**40, 2**62, -(2**63), 4, -3])
def test_trilu_with_a_k_beyond_the_matrix_keeps_all_or_nothing(upper, k):
    # a k past the matrix is a valid model; it must not meet the loop's int32 indices
    from onnx import numpy_helper
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype("float32")
    g = helper.make_graph([helper.make_node("Trilu", ["x", "k"], ["y"], upper=upper)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
                          [numpy_helper.from_array(np.array(k, "int64"), "k")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    d = np.arange(4)[None, :] - np.arange(3)[:, None]   # column - row
    keep = d >= np.int64(k) if upper else d <= np.int64(k)
    want = np.where(keep, x, np.float32(0))
    np.testing.assert_array_equal(mb.compile(mb.from_onnx(m))(x), want)
