"""Shape/dtype inference errors of the ops added for the ONNX operator set."""
import numpy as np
import pytest

from mlcbook import ops
from mlcbook.errors import OpAttributeError, OpDTypeError, OpShapeError
from mlcbook.ops import TensorType


def test_prelu_slope_must_not_widen_the_input():
    with pytest.raises(OpShapeError, match="must broadcast to the input's"):
        ops.get("prelu").infer_type([TensorType((3,)), TensorType((2, 3))], {})


def test_mod_takes_numbers_not_bools():
    with pytest.raises(OpDTypeError, match="mod takes int8"):
        ops.get("mod").infer_type([TensorType((3,), "bool"), TensorType((3,), "bool")], {})


def test_tile_needs_positive_repeats():
    with pytest.raises(OpAttributeError, match=r"tile: repeats=\(1, 0\) must give a positive "
                                           "count for each of the 2 dimensions"):
        ops.get("tile").infer_type([TensorType((2, 3))], {"repeats": (1, 0)})


def test_trilu_needs_a_matrix():
    with pytest.raises(OpShapeError, match="at least 2"):
        ops.get("trilu").infer_type([TensorType((3,))], {})


def test_conv_transpose_output_shape():
    t = ops.get("conv_transpose").infer_type(
        [TensorType((1, 4, 5, 5)), TensorType((4, 3, 3, 3))],
        {"strides": (2, 2), "pads": (1, 1, 1, 1), "output_padding": (1, 1)})
    assert t.shape == (1, 3, 10, 10)


def test_conv_transpose_reference_is_the_adjoint_of_conv():
    # <conv(x, w), y> == <x, conv_transpose(y, w)>: the transpose of the same linear map
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((1, 2, 7, 7)), rng.standard_normal((3, 2, 3, 3))
    attrs = {"strides": (2, 2), "pads": (1, 1, 1, 1), "dilations": (1, 1), "group": 1}
    y = ops.get("conv").reference(x, w, kernel_shape=(3, 3), **attrs)
    g = rng.standard_normal(y.shape)
    back = ops.get("conv_transpose").reference(g, w, **attrs)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(y * g), np.sum(x * back), rtol=1e-10)


def test_argmax_returns_int64_and_first_of_ties():
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, 5.0]], np.float32)
    ref = ops.get("argmax").reference
    assert ref(x, axis=1, keepdims=0).tolist() == [1, 0]
    assert ref(x[:1], axis=1, keepdims=0, select_last_index=1).tolist() == [2]
    t = ops.get("argmax").infer_type([TensorType((2, 3))], {"axis": 1, "keepdims": 0})
    assert t == TensorType((2,), "int64")


def test_resize_names_an_unsupported_mode_and_what_to_use():
    with pytest.raises(OpAttributeError, match=r"mode='area' is not supported.*Instead: use "
                       "'linear'"):
        ops.get("resize").infer_type([TensorType((1, 4))], {"sizes": (1, 8), "scales": (1, 2),
                                                             "mode": "area"})


def test_resize_linear_needs_floats():
    with pytest.raises(OpDTypeError, match="linear mode of a int32 tensor; cast it"):
        ops.get("resize").infer_type([TensorType((4,), "int32")],
                                     {"sizes": (8,), "scales": (2,), "mode": "linear"})


def test_bitshift_takes_integers_and_a_direction():
    with pytest.raises(OpDTypeError, match="bitshift takes int8"):
        ops.get("bitshift").infer_type([TensorType((3,)), TensorType((3,))], {})
    with pytest.raises(OpAttributeError, match="bitshift: direction='UP' is not one of 'LEFT', 'RIGHT'"):
        ops.get("bitshift").infer_type([TensorType((3,), "int8")] * 2, {"direction": "UP"})


def test_bitwise_ops_take_integers():
    with pytest.raises(OpDTypeError, match="bitwise_and takes int8"):
        ops.get("bitwise_and").infer_type([TensorType((3,)), TensorType((3,))], {})
    with pytest.raises(OpDTypeError, match="bitwise_not takes int8"):
        ops.get("bitwise_not").infer_type([TensorType((3,), "bool")], {})


def test_bitcast_needs_a_type_of_the_same_width():
    t = ops.get("bitcast").infer_type([TensorType((2, 3))], {"dtype": "int32"})
    assert t == TensorType((2, 3), "int32")
    with pytest.raises(OpDTypeError, match="a float32 tensor cannot be read as int64; the two "
                       "types must have the same width.*Instead: cast it"):
        ops.get("bitcast").infer_type([TensorType((3,))], {"dtype": "int64"})


def test_bitcast_reference_keeps_a_0d_tensor_0d():
    x = np.array(1.0, np.float32)
    assert ops.get("bitcast").reference(x, dtype="int32").shape == ()


def test_running_product_reference():
    ref = ops.get("cumprod").reference
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    assert ref(x, axis=1).tolist() == [[1, 2, 6], [4, 20, 120]]
    assert ref(x, axis=1, exclusive=1).tolist() == [[1, 1, 2], [1, 4, 20]]
    assert ref(x, axis=1, exclusive=1, reverse=1).tolist() == [[6, 3, 1], [30, 6, 1]]
    with pytest.raises(OpDTypeError, match="cumprod takes int8"):
        ops.get("cumprod").infer_type([TensorType((3,), "bool")], {"axis": 0})


def test_max_pool_indices_are_int64_offsets_and_storage_order_is_checked():
    t = ops.get("max_pool_indices").infer_type([TensorType((1, 2, 4, 4))],
                                               {"kernel_shape": (2, 2), "strides": (2, 2)})
    assert t == TensorType((1, 2, 2, 2), "int64")
    x = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    got = ops.get("max_pool_indices").reference(x, kernel_shape=(2, 2), strides=(2, 2),
                                                storage_order=1)
    # the max of each window is its bottom-right element; column-major h + 4 w, per plane
    assert got.tolist() == [[[[5, 13], [7, 15]], [[21, 29], [23, 31]]]]
    with pytest.raises(OpAttributeError, match="storage_order=2 is not 0"):
        ops.get("max_pool_indices").infer_type([TensorType((1, 1, 4, 4))],
                                               {"kernel_shape": (2, 2), "storage_order": 2})
