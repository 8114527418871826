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
    with pytest.raises(OpAttributeError, match="must be positive"):
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
    with pytest.raises(OpAttributeError, match="linear mode of a int32 tensor; cast it"):
        ops.get("resize").infer_type([TensorType((4,), "int32")],
                                     {"sizes": (8,), "scales": (2,), "mode": "linear"})


def test_bitshift_takes_integers_and_a_direction():
    with pytest.raises(OpDTypeError, match="bitshift takes int8"):
        ops.get("bitshift").infer_type([TensorType((3,)), TensorType((3,))], {})
    with pytest.raises(OpAttributeError, match="direction='UP' is not 'LEFT' or 'RIGHT'"):
        ops.get("bitshift").infer_type([TensorType((3,), "int8")] * 2, {"direction": "UP"})
