"""Shape and dtype inference: results and the errors users see."""
import pytest

from mlcbook.errors import OpAttributeError, OpDTypeError, OpShapeError
from mlcbook.ops import TensorType as T
from mlcbook.ops import TupleType, get


def infer(op, types, **attrs):
    return get(op).infer_type(types, attrs)


def test_broadcasting_follows_numpy():
    assert infer("add", [T((8, 1, 5)), T((4, 1))]) == T((8, 4, 5))
    assert infer("where", [T((3, 1), "bool"), T((4,)), T(())]) == T((3, 4))


def test_broadcast_error_names_both_shapes():
    with pytest.raises(OpShapeError, match=r"add: shapes \(2, 3\) and \(4,\) cannot be broadcast"):
        infer("add", [T((2, 3)), T((4,))])


def test_dtype_mismatch_says_to_cast():
    with pytest.raises(OpDTypeError, match="insert a cast"):
        infer("mul", [T((2,), "float32"), T((2,), "int64")])


def test_comparison_returns_bool():
    assert infer("less", [T((2, 3)), T((3,))]).dtype == "bool"


def test_matmul_batched_and_1d():
    assert infer("matmul", [T((8, 1, 4, 5)), T((3, 5, 6))]) == T((8, 3, 4, 6))
    assert infer("matmul", [T((5,)), T((5, 6))]) == T((6,))
    assert infer("matmul", [T((5,)), T((5,))]) == T(())


def test_matmul_inner_dimension_error():
    with pytest.raises(OpShapeError, match=r"matmul: the operands have shapes \(2, 4\) and "
                                           r"\(5, 3\): the contracted dimensions 4 and 5 differ"):
        infer("matmul", [T((2, 4)), T((5, 3))])


def test_gemm_transposes():
    assert infer("gemm", [T((4, 3)), T((5, 4)), T((5,))], trans_a=1, trans_b=1) == T((3, 5))
    with pytest.raises(OpShapeError, match=r"gemm: the operands have shapes \(4, 3\) and \(5, "
                                           r"4\): the contracted dimensions 3 and 5 differ "
                                           r"\(4x3 times 5x4\); .* the transpose flags"):
        infer("gemm", [T((4, 3)), T((5, 4))])


def test_gemm_with_b_in_panels_has_the_unpacked_width():
    assert infer("gemm", [T((4, 3)), T((5, 3, 8))], b_panel=8) == T((4, 40))


@pytest.mark.parametrize("b,trans_b", [((5, 3, 4), 0), ((3, 40), 0), ((5, 3, 8), 1)])
def test_gemm_with_b_in_panels_needs_the_packed_shape(b, trans_b):
    with pytest.raises(OpShapeError, match=r"b_panel=8, b must be packed as \(N // 8, K, 8\) "
                                           r"and trans_b must be 0.*pack_panels\(b, 8\)"):
        infer("gemm", [T((4, 3)), T(b)], b_panel=8, trans_b=trans_b)


def test_conv_output_size_with_stride_padding_dilation():
    out = infer("conv", [T((1, 3, 32, 32)), T((8, 3, 3, 3))], strides=(2, 2), pads=(1, 1, 1, 1))
    assert out == T((1, 8, 16, 16))
    out = infer("conv", [T((1, 4, 10)), T((6, 2, 3))], group=2, dilations=(2,))
    assert out == T((1, 6, 6))


def test_conv_group_mismatch():
    with pytest.raises(OpShapeError, match="input channels"):
        infer("conv", [T((1, 4, 8, 8)), T((6, 4, 3, 3))], group=2)


def test_pool_ceil_mode_rounds_up():
    x = T((1, 1, 5, 5))
    assert infer("max_pool", [x], kernel_shape=(2, 2), strides=(2, 2)) == T((1, 1, 2, 2))
    assert infer("max_pool", [x], kernel_shape=(2, 2), strides=(2, 2), ceil_mode=1) == \
        T((1, 1, 3, 3))


def test_reshape_zero_and_minus_one():
    assert infer("reshape", [T((2, 3, 4))], shape=(0, -1)) == T((2, 12))
    with pytest.raises(OpShapeError, match="cannot reshape"):
        infer("reshape", [T((2, 3))], shape=(4, 2))


def test_split_returns_a_tuple_and_checks_sizes():
    assert infer("split", [T((6, 2))], sizes=(2, 4)) == TupleType((T((2, 2)), T((4, 2))))
    with pytest.raises(OpShapeError, match="add up to 6"):
        infer("split", [T((6, 2))], sizes=(2, 2))


def test_slice_clamps_like_onnx():
    assert infer("slice", [T((10,))], starts=(-3,), ends=(1000,)) == T((3,))
    assert infer("slice", [T((10,))], starts=(8,), ends=(-100,), steps=(-2,)) == T((5,))


def test_squeeze_non_unit_axis_is_an_error():
    with pytest.raises(OpShapeError, match="has size 3, not 1"):
        infer("squeeze", [T((1, 3))], axes=(1,))


def test_axis_out_of_range():
    with pytest.raises(OpAttributeError, match=r"axis=2 is out of range .* rank 2"):
        infer("softmax", [T((2, 3))], axis=2)


def test_reductions_keepdims():
    assert infer("sum", [T((2, 3, 4))], axes=(1,), keepdims=0) == T((2, 4))
    assert infer("max", [T((2, 3, 4))]) == T((1, 1, 1))


def test_layer_norm_statistics_outputs():
    out = infer("layer_norm", [T((2, 5, 8)), T((8,))], axis=-1, num_outputs=3)
    assert out.fields[1] == T((2, 5, 1))


def test_float_only_op_rejects_ints():
    with pytest.raises(OpDTypeError, match="exp takes float16, bfloat16, float32, float64"):
        infer("exp", [T((2,), "int32")])


def test_gather_output_shape():
    assert infer("gather", [T((5, 4, 3)), T((2, 2), "int64")], axis=1) == T((5, 2, 2, 3))
