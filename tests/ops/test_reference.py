"""The numpy references, checked against direct (slow, obviously right) computations."""
import itertools

import numpy as np

import pytest

from mlcbook.errors import ArgumentError, OpAttributeError, OpShapeError
from mlcbook.ops import TensorType, get
from mlcbook.ops.linalg import pack_panels


def ref(op, *args, **attrs):
    o = get(op)
    return o.reference(*args, **dict(o.normalize_attrs(attrs)))


def naive_conv2d(x, w, stride, pad):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, f, oh, ow))
    for b, k, i, j in itertools.product(range(n), range(f), range(oh), range(ow)):
        out[b, k, i, j] = np.sum(xp[b, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
                                 * w[k])
    return out


def test_conv_matches_direct_loops():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6)).astype("float32")
    w = rng.standard_normal((4, 3, 3, 3)).astype("float32")
    got = ref("conv", x, w, strides=(2, 2), pads=(1, 1, 1, 1))
    np.testing.assert_allclose(got, naive_conv2d(x, w, 2, 1), rtol=1e-5, atol=1e-5)


def test_grouped_conv_is_per_group_conv():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 4, 5, 5)).astype("float32")
    w = rng.standard_normal((6, 2, 3, 3)).astype("float32")
    got = ref("conv", x, w, group=2)
    want = np.concatenate([naive_conv2d(x[:, :2], w[:3], 1, 0),
                           naive_conv2d(x[:, 2:], w[3:], 1, 0)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_avg_pool_count_include_pad():
    x = np.ones((1, 1, 2, 2), "float32")
    excl = ref("avg_pool", x, kernel_shape=(2, 2), pads=(1, 1, 1, 1), strides=(1, 1))
    incl = ref("avg_pool", x, kernel_shape=(2, 2), pads=(1, 1, 1, 1), strides=(1, 1),
               count_include_pad=1)
    assert np.all(excl == 1.0)
    assert incl[0, 0, 0, 0] == 0.25 and incl[0, 0, 1, 1] == 1.0


def test_max_pool_ignores_padding():
    x = -np.ones((1, 1, 2, 2), "float32")
    assert np.all(ref("max_pool", x, kernel_shape=(2, 2), pads=(1, 1, 1, 1)) == -1.0)


def test_integer_division_truncates_toward_zero():
    x = np.array([-7, 7, -7, 7], "int32")
    y = np.array([2, 2, -2, -2], "int32")
    assert ref("div", x, y).tolist() == [-3, 3, 3, -3]


def test_uint64_division_modulo_and_topk_keep_values_above_two_to_the_63():
    x = np.array([2**64 - 1, 2**63 + 10, 9, 0], "uint64")
    y = np.array([2, 3, 0, 5], "uint64")
    assert ref("div", x, y).tolist() == [2**63 - 1, (2**63 + 10) // 3, 0, 0]
    assert ref("mod", x, y).tolist() == [1, (2**63 + 10) % 3, 0, 0]
    values, order = ref("topk", x, k=2, axis=0)
    assert values.tolist() == [2**64 - 1, 2**63 + 10] and order.tolist() == [0, 1]


def test_bfloat16_references_are_float_references():
    x = np.array([[1.5, -2.0, 0.25]], "bfloat16")
    assert ref("max", np.zeros((2, 0), "bfloat16"), axes=(1,), keepdims=0).tolist() == \
        [-np.inf, -np.inf]
    assert ref("sum", x, axes=(1,), keepdims=0).astype("float32").tolist() == [-0.25]
    assert ref("matmul", x, x.T).dtype == np.dtype("bfloat16")


def test_softmax_rows_sum_to_one_and_survive_large_inputs():
    x = np.array([[1000.0, 1001.0, 1002.0]], "float32")
    s = ref("softmax", x)
    assert np.isfinite(s).all() and abs(s.sum() - 1) < 1e-6


def test_float16_softmax_reference_rounds_each_stage_like_onnx():
    # exp(x - max), its sum and the quotient each rounded to float16, as onnx's reference
    x = (np.random.default_rng(5).standard_normal((16, 6)) * 3).astype("float16")
    from onnx.reference.ops.op_softmax import Softmax
    expected = Softmax.eval(x, axis=-1)
    once = ref("softmax", x.astype("float64")).astype("float16")
    assert (expected != once).any()  # rounding once would not do
    np.testing.assert_array_equal(ref("softmax", x), expected)


def test_layer_norm_normalizes():
    x = np.random.default_rng(2).standard_normal((3, 8)).astype("float32")
    y = ref("layer_norm", x, np.ones(8, "float32"), np.zeros(8, "float32"))
    np.testing.assert_allclose(y.mean(axis=1), 0, atol=1e-6)
    np.testing.assert_allclose(y.std(axis=1), 1, atol=1e-3)


def test_reduce_max_of_nothing_is_minus_infinity():
    assert ref("max", np.zeros((2, 0), "float32"), axes=(1,), keepdims=0).tolist() == \
        [-np.inf, -np.inf]


def test_pad_modes():
    x = np.array([1, 2, 3], "float32")
    assert ref("pad", x, pads=(2, 1), mode="reflect").tolist() == [3, 2, 1, 2, 3, 2]
    assert ref("pad", x, pads=(1, 1), mode="edge").tolist() == [1, 1, 2, 3, 3]
    assert ref("pad", x, pads=(1, 2), mode="wrap").tolist() == [3, 1, 2, 3, 1, 2]
    assert ref("pad", x, pads=(-1, 1), value=9.0).tolist() == [2, 3, 9]


def test_gemm_with_b_in_panels_is_the_plain_product():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 7)), rng.standard_normal((7, 12))
    np.testing.assert_allclose(ref("gemm", a, pack_panels(b, 4), b_panel=4), a @ b, rtol=1e-12)


def test_pack_panels_puts_each_panels_columns_together():
    b = np.arange(12).reshape(2, 6)
    np.testing.assert_array_equal(pack_panels(b, 3), [[[0, 1, 2], [6, 7, 8]],
                                                      [[3, 4, 5], [9, 10, 11]]])
    with pytest.raises(OpShapeError, match="6 columns do not split into panels of 4"):
        pack_panels(b, 4)


def test_lrn_matches_the_onnx_formula_at_the_channel_edges():
    x = np.arange(1, 9, dtype="float32").reshape(1, 4, 2, 1)
    got = get("lrn").reference(x, size=3, alpha=0.3, beta=0.5, bias=1.0)
    sq = x.astype(np.float64) ** 2
    # channel 0 sees channels 0 and 1 (size 3, one before and one after); channel 3 sees 2, 3
    want0 = x[0, 0] / np.sqrt(1.0 + 0.1 * (sq[0, 0] + sq[0, 1]))
    want3 = x[0, 3] / np.sqrt(1.0 + 0.1 * (sq[0, 2] + sq[0, 3]))
    np.testing.assert_allclose(got[0, 0], want0, rtol=1e-6)
    np.testing.assert_allclose(got[0, 3], want3, rtol=1e-6)


def test_lrn_of_an_empty_batch_is_empty():
    x = np.zeros((0, 4, 2, 2), "float32")
    assert get("lrn").reference(x, size=3).shape == (0, 4, 2, 2)


def test_range_counts_up_and_down_and_rejects_a_zero_step():
    assert get("range").reference(start=10, limit=4, delta=-3, dtype="int32").tolist() == [10, 7]
    assert get("range").infer_type([], {"start": 0, "limit": 5, "delta": 2,
                                            "dtype": "int64"}).shape == (3,)
    with pytest.raises(OpAttributeError, match="delta=0"):
        get("range").infer_type([], {"start": 0, "limit": 5, "delta": 0, "dtype": "int64"})


def test_reductions_of_nothing_give_their_identity():
    nothing = np.zeros((2, 0), "float32")
    assert ref("sum", nothing, axes=(1,), keepdims=0).tolist() == [0.0, 0.0]
    assert ref("prod", nothing, axes=(1,), keepdims=1).tolist() == [[1.0], [1.0]]
    assert np.isnan(ref("mean", nothing, axes=(1,), keepdims=0)).all()
    assert ref("min", np.zeros((0,), "int8"), keepdims=0).tolist() == 127
    assert ref("sum", nothing, axes=(0,), keepdims=0).shape == (0,)


def test_argmax_of_an_empty_axis_is_refused():
    x = TensorType((2, 0))
    with pytest.raises(OpShapeError, match="argmax: axis 1 of \\(2, 0\\) has no elements"):
        get("argmax").infer_type([x], {"axis": 1})
    assert get("argmax").infer_type([x], {"axis": 0, "keepdims": 0}).shape == (0,)


def test_a_0d_tensor_reduces_to_itself():
    x = np.asarray(np.float32(2.5))
    assert ref("mean", x).shape == () and ref("mean", x) == 2.5


def test_data_movement_of_an_empty_tensor_is_empty():
    x = np.zeros((0, 3), "float32")
    assert ref("transpose", x).shape == (3, 0)
    assert ref("tile", x, repeats=(2, 2)).shape == (0, 6)
    assert ref("expand", x, shape=(2, 1, 1)).shape == (2, 0, 3)
    assert ref("trilu", x).shape == (0, 3)


def test_a_slice_past_the_end_is_empty_and_padding_nothing_gives_the_fill():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    assert ref("slice", x, starts=(5,), ends=(100,)).shape == (0, 4)
    assert ref("pad", x[:0], pads=(1, 1, 0, 0), value=7.0).tolist() == [[7.0] * 5]


def test_concat_and_split_match_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)).astype("float32"), rng.standard_normal((2, 1))
    b = b.astype("float32")
    np.testing.assert_array_equal(ref("concat", a, b, a, axis=-1), np.concatenate([a, b, a], 1))
    pieces = ref("split", a, axis=1, sizes=(1, 2))
    assert isinstance(pieces, tuple) and len(pieces) == 2
    for got, want in zip(pieces, np.split(a, [1], axis=1)):
        np.testing.assert_array_equal(got, want)


def test_a_concat_skips_empty_inputs_and_a_split_gives_empty_pieces():
    a = np.arange(6, dtype="int8").reshape(3, 2)
    np.testing.assert_array_equal(ref("concat", a[:0], a, a[:0], axis=0), a)
    assert ref("concat", a[:0], a[:0], axis=0).shape == (0, 2)
    pieces = ref("split", a, axis=0, sizes=(0, 2, 0, 1))
    assert [p.shape for p in pieces] == [(0, 2), (2, 2), (0, 2), (1, 2)]
    np.testing.assert_array_equal(np.concatenate(pieces), a)
    (one,) = ref("split", a, sizes=(3,))
    np.testing.assert_array_equal(one, a)


def test_gathers_match_numpy_with_negative_indices():
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    i = np.array([[0, -1], [2, 1]], "int64")
    np.testing.assert_array_equal(ref("gather", x, i, axis=2), np.take(x, i, axis=2))
    np.testing.assert_array_equal(ref("gather", x, np.array(-1), axis=1), x[:, -1])
    e = np.array([[[1, -1, 0, 2]], [[0, 0, -3, 1]]], "int32")
    np.testing.assert_array_equal(ref("gather_elements", x, e, axis=1),
                                  np.take_along_axis(x, e % 3, axis=1))
    nd = np.array([[1, -2], [0, 3]], "int64")      # (row, column) pairs of each batch
    want = np.stack([x[b, r % 3, c] for b, (r, c) in enumerate(nd)])
    np.testing.assert_array_equal(ref("gather_nd", x, nd[:, None, :], batch_dims=1),
                                  want[:, None])


@pytest.mark.parametrize("op,attrs,index", [
    ("gather", {"axis": 1}, np.array([3], "int64")),
    ("gather_elements", {"axis": 1}, np.array([[[-4]], [[0]]], "int64")),
    ("gather_nd", {"batch_dims": 1}, np.array([[0, 4], [0, 0]], "int64"))])
def test_gathers_refuse_an_index_outside_the_axis(op, attrs, index):
    x = np.zeros((2, 3, 4), "float32")
    with pytest.raises(ArgumentError, match=f"{op}: an index is outside"):
        ref(op, x, index, **attrs)


def test_gathers_of_no_indices_are_empty():
    x = np.zeros((2, 3), "float32")
    assert ref("gather", x, np.zeros((0,), "int64"), axis=1).shape == (2, 0)
    assert ref("gather_elements", x, np.zeros((2, 0), "int64"), axis=1).shape == (2, 0)
    assert ref("gather_nd", x, np.zeros((0, 1), "int64")).shape == (0, 3)
