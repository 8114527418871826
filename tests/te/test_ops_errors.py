"""Bad arguments to the operator library raise TEError / TEShapeError naming what is wrong."""

import pytest

from mlcbook import te
from mlcbook.errors import TEAttributeError, TEDTypeError, TEError, TEShapeError
from mlcbook.te import ops


def x(*shape, name="x", dtype="float32"):
    return te.placeholder(shape, dtype, name=name)


def test_shape_errors_carry_their_own_code():
    with pytest.raises(TEShapeError, match=r"\[MLC-X002\]"):
        ops.add(x(3, 4, name="a"), x(5, name="b"))


def test_broadcast_mismatch():
    with pytest.raises(TEShapeError, match=r"add: shapes \(2, 3, 4\) and \(5, 1\) cannot be "
                                           r"broadcast: dimension 1 of the result would need "
                                           r"sizes \[3, 5\]"):
        ops.add(x(2, 3, 4, name="a"), x(5, 1, name="b"))


def test_binary_dtype_mismatch():
    with pytest.raises(TEError, match="mul: 'a' is float32 but 'b' is int32; cast one"):
        ops.mul(x(3, name="a"), x(3, name="b", dtype="int32"))


def test_binary_needs_a_tensor():
    with pytest.raises(TEError, match="at least one of the operands must be a te tensor"):
        ops.add(1.0, 2.0)


def test_unary_math_needs_floats():
    with pytest.raises(TEError, match="exp: tensor 'n' has dtype int32"):
        ops.exp(x(3, name="n", dtype="int32"))


def test_operator_argument_must_be_a_tensor():
    with pytest.raises(TEError, match="relu: argument x is 3.0, not a te tensor"):
        ops.relu(3.0)


@pytest.mark.parametrize("sa,sb,kw,msg", [
    ((3, 4), (5, 6), {}, r"matmul: the operands have shapes \(3, 4\) and \(5, 6\): the "
                         r"contracted dimensions 4 and 5 differ"),
    ((3, 4), (3, 6), {"transpose_b": True},
     r"\(with transpose_b\): the contracted dimensions 4 and 6 differ"),
    ((2, 3, 4), (3, 4, 5), {}, r"matmul \(batch dimensions\): shapes \(2,\) and \(3,\) cannot "
                               r"be broadcast"),
])
def test_matmul_shape_errors(sa, sb, kw, msg):
    with pytest.raises(TEShapeError, match=msg):
        ops.matmul(x(*sa, name="a"), x(*sb, name="b"), **kw)


def test_batch_matmul_needs_3d():
    with pytest.raises(TEShapeError, match=r"operand b \('b'\) has shape \(4, 5\) but must be "
                                           "3-D"):
        ops.batch_matmul(x(2, 3, 4, name="a"), x(4, 5, name="b"))


def test_conv2d_channel_mismatch():
    with pytest.raises(TEShapeError, match=r"the weight has shape \(4, 2, 3, 3\), so 2 input "
                                           r"channels per group, but the data \(1, 3, 8, 8\) "
                                           "with groups=1 has 3"):
        ops.conv2d(x(1, 3, 8, 8, name="d"), x(4, 2, 3, 3, name="w"))


def test_conv2d_groups_must_divide_channels():
    with pytest.raises(TEShapeError, match=r"groups=2 must divide both the input channels \(3\)"):
        ops.conv2d(x(1, 3, 8, 8, name="d"), x(4, 1, 3, 3, name="w"), groups=2)


def test_conv2d_kernel_larger_than_input():
    with pytest.raises(TEShapeError, match=r"the height window spans 5 but the padded input is "
                                           r"only 4 \(4 \+ padding 0\+0\)"):
        ops.conv2d(x(1, 1, 4, 8, name="d"), x(1, 1, 5, 3, name="w"))


def test_conv2d_needs_4d():
    with pytest.raises(TEShapeError, match=r"conv2d: the data has shape \(3, 8, 8\) but must "
                                           "be 4-D"):
        ops.conv2d(x(3, 8, 8, name="d"), x(4, 3, 3, 3, name="w"))


def test_conv2d_bad_stride():
    with pytest.raises(TEError, match=r"stride=\(1, 2, 3\) must be an int or 2 ints"):
        ops.conv2d(x(1, 3, 8, 8, name="d"), x(4, 3, 3, 3, name="w"), stride=(1, 2, 3))


def test_pool_padding_larger_than_window():
    with pytest.raises(TEShapeError, match="padding 2 must be smaller than the pooling window"):
        ops.max_pool2d(x(1, 1, 8, 8), 2, padding=2)


def test_avg_pool_needs_floats():
    with pytest.raises(TEError, match="average pooling needs floats"):
        ops.avg_pool2d(x(1, 1, 4, 4, dtype="int32"), 2)


def test_bias_add_shape():
    with pytest.raises(TEShapeError, match=r"the bias has shape \(4,\) but must be \(3,\), the "
                                           r"size of axis 1"):
        ops.bias_add(x(2, 3, 5), x(4, name="b"))


def test_axis_out_of_range():
    with pytest.raises(TEShapeError, match=r"softmax: axis 2 is out of range for a tensor with 2 "
                                           r"dimension\(s\)"):
        ops.softmax(x(3, 4), axis=2)


def test_layer_norm_gamma_shape():
    with pytest.raises(TEShapeError,
                       match=r"the gamma has shape \(4,\) but must broadcast to \(5,\)"):
        ops.layer_norm(x(3, 5), x(4, name="g"))


def test_transpose_needs_a_permutation():
    with pytest.raises(TEAttributeError, match=r"transpose: \(0, 0, 1\) is not a permutation "
                                               r"of the 3 dimensions of the data \(2, 3, 4\)"):
        ops.transpose(x(2, 3, 4), (0, 0, 1))


@pytest.mark.parametrize("new,msg", [
    ((4, 4), r"cannot reshape the data of shape \(3, 5\) \(15 elements\) into \(4, 4\) \(16 "
             r"elements\)"),
    ((4, -1), r"cannot infer the -1 in \(4, -1\) .*: its 15 elements are not a multiple of 4"),
])
def test_reshape_errors(new, msg):
    with pytest.raises(TEShapeError, match=msg):
        ops.reshape(x(3, 5), new)


def test_reshape_takes_one_minus_one():
    with pytest.raises(TEAttributeError, match=r"new shape \(-1, -1\) must be ints >= 0 with at "
                                               "most one -1"):
        ops.reshape(x(3, 5), (-1, -1))


def test_pad_width_per_dimension():
    with pytest.raises(TEAttributeError, match=r"need one \(before, after\) pair per dimension "
                                               "of the data, which has 2"):
        ops.pad(x(3, 5), ((1, 1),))


def test_reduce_axis_named_twice():
    with pytest.raises(TEShapeError, match=r"axis \(1, -1\) names a dimension twice"):
        ops.sum(x(3, 5), axis=(1, -1))


def test_matmul_dtype_mismatch():
    with pytest.raises(TEError, match="matmul: 'a' is float32 but 'b' is int32"):
        ops.matmul(x(3, 4, name="a"), x(4, 2, name="b", dtype="int32"))


def test_where_needs_a_bool_condition():
    with pytest.raises(TEError, match="where: the condition 'c' is float32, not bool"):
        ops.where(x(3, name="c"), x(3, name="a"), x(3, name="b"))


def test_gather_needs_integer_indices():
    with pytest.raises(TEDTypeError, match="gather: the indices are float32; Instead: give an "
                                           "int tensor"):
        ops.gather(x(4, 3), x(2, name="i"))


def test_pad_mode_is_checked():
    with pytest.raises(TEAttributeError, match="pad: mode 'mirror' is not one of"):
        ops.pad(x(3, 4), 1, mode="mirror")


def test_pad_cannot_crop_everything():
    with pytest.raises(TEShapeError, match=r"crop the data \(3, 4\) to \(3, 0\); Instead: keep at "
                                           "least one element of every dimension"):
        ops.pad(x(3, 4), ((0, 0), (-2, -2)))


def test_split_sizes_must_add_up():
    with pytest.raises(TEShapeError, match=r"split: sizes \(1, 2\) must be positive and add up "
                                           r"to 4, the size of axis 1 of the data \(3, 4\)"):
        ops.split(x(3, 4), (1, 2), axis=1)


def test_concat_shapes_must_agree():
    with pytest.raises(TEShapeError, match=r"concat: input 1 \(3, 2\) does not fit input 0 "
                                           r"\(2, 2\); Instead: give inputs of one shape except "
                                           "along axis 1"):
        ops.concat([x(2, 2, name="a"), x(3, 2, name="b")], axis=1)


def test_slice_step_zero():
    with pytest.raises(TEShapeError, match="slice: a step of 0 is not allowed"):
        ops.slice(x(3, 4), (0,), (2,), steps=(0,))


def test_conv_bias_shape():
    with pytest.raises(TEShapeError, match=r"conv: the bias has shape \(3,\) but must be \(4,\)"):
        ops.conv(x(1, 3, 8), x(4, 3, 3, name="w"), x(3, name="b"))


def test_attention_needs_4d_operands():
    with pytest.raises(TEShapeError, match="attention: q has shape \\(2, 3, 4\\); q, k and "
                                           "v are \\(batch, heads, sequence, head size\\)"):
        ops.attention(x(2, 3, 4, name="q"), x(1, 2, 3, 4, name="k"), x(1, 2, 3, 4, name="v"))


def test_attention_query_heads_must_be_a_multiple_of_key_heads():
    with pytest.raises(TEShapeError, match="q's heads must be a multiple of k's"):
        ops.attention(x(1, 3, 2, 4, name="q"), x(1, 2, 5, 4, name="k"), x(1, 2, 5, 4, name="v"))


def test_attention_names_its_second_outputs():
    q = x(1, 2, 2, 4, name="q")
    with pytest.raises(TEAttributeError, match="qk_output='softmax'; give None or one of"):
        ops.attention(q, q, q, qk_output="softmax")


def test_rotary_embedding_needs_an_even_rotary_dim():
    with pytest.raises(TEAttributeError, match="the rotary dimension 3 .* must be even, at most "
                                               "the head size 8"):
        ops.rotary_embedding(x(1, 2, 3, 8), x(1, 3, 1, name="c"), x(1, 3, 1, name="s"),
                             rotary_dim=3)


def test_concat_dtypes_must_agree():
    with pytest.raises(TEDTypeError, match="concat: input 1 is int32 but input 0 is float32"):
        ops.concat([x(2, 2, name="a"), x(2, 2, name="b", dtype="int32")])


def test_tile_needs_a_positive_count_per_dimension():
    with pytest.raises(TEAttributeError, match=r"tile: repeats=\(2,\) must give a positive count "
                                               "for each of the 2 dimensions"):
        ops.tile(x(3, 4), (2,))


def test_trilu_needs_a_matrix():
    with pytest.raises(TEShapeError, match=r"trilu: the data has shape \(3,\), of rank 1; it "
                                           "needs at least 2"):
        ops.trilu(x(3))
