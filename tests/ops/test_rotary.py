"""The graph op ``rotary_embedding``: its reference (its te compute run with numpy) against
onnx's reference implementation, the oracle; its legalization (run by the loop-IR
interpreter) against the reference, and its errors."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import OpAttributeError, OpShapeError
from mlcbook.ops import TensorType as T, legalize_call

onnx_rotary = pytest.importorskip("onnx.reference.ops.op_rotary_embedding")

#: (dtype, interleaved, rotary_embedding_dim)
CASES = [("float32", 0, 0), ("float32", 1, 0), ("float32", 0, 4), ("float16", 1, 4),
         ("float64", 0, 6)]


def _inputs(dtype, rotary_dim, seed=0):
    rng = np.random.default_rng(seed)
    r = rotary_dim or 8
    x = rng.standard_normal((2, 3, 5, 8)).astype(dtype)
    cos, sin = (rng.standard_normal((2, 5, r // 2)).astype(dtype) for _ in range(2))
    return [x, cos, sin]


def _reference(args, attrs):
    op = ops.get("rotary_embedding")
    return op.reference(*args, **dict(op.normalize_attrs(attrs)))


@pytest.mark.parametrize("dtype,interleaved,rotary_dim", CASES, ids=str)
def test_reference_matches_onnx_reference(dtype, interleaved, rotary_dim):
    args = _inputs(dtype, rotary_dim)
    got = _reference(args, {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim})
    expected = onnx_rotary.rotary_embedding(*args, interleaved=interleaved,
                                            rotary_embedding_dim=rotary_dim)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype,interleaved,rotary_dim", CASES, ids=str)
def test_legalization_matches_reference(dtype, interleaved, rotary_dim):
    args = _inputs(dtype, rotary_dim, seed=1)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    func = legalize_call("rotary_embedding", [T(a.shape, dtype) for a in args], attrs)
    y = np.full(args[0].shape, np.nan, dtype)
    mb.tir.interpret(func, *args, y)
    expected = _reference(args, attrs)
    if dtype == "float16":  # each product rounded to float16 before the sum, as the reference
        np.testing.assert_array_equal(y, expected)
    else:
        np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def test_odd_rotary_dim_is_an_error():
    with pytest.raises(OpAttributeError, match="the rotary dimension 3 .* must be even, at "
                                               "most the head size"):
        ops.get("rotary_embedding").infer_type(
            [T((1, 2, 3, 8)), T((1, 3, 1)), T((1, 3, 1))], {"rotary_embedding_dim": 3})


def test_cos_of_the_wrong_shape_is_an_error():
    with pytest.raises(OpShapeError, match=r"must be \(1, 3, 4\)"):
        ops.get("rotary_embedding").infer_type(
            [T((1, 2, 3, 8)), T((3, 4)), T((3, 4))], {})


def test_rotary_embedding_of_an_empty_sequence_is_empty():
    x, cs = np.zeros((1, 2, 0, 8), "float32"), np.zeros((1, 0, 4), "float32")
    assert ops.get("rotary_embedding").reference(x, cs, cs).shape == (1, 2, 0, 8)
