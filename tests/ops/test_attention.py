"""The graph op ``attention``: its reference (its te compute run with numpy) against onnx's
reference implementation, the oracle; its legalization (run by the loop-IR interpreter)
against the reference, and its errors. The compiled kernel is checked by onnx's node suite
(tests/frontend/test_conformance.py compiles an Attention case)."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import OpAttributeError, OpDTypeError, OpShapeError
from mlcbook.ops import TensorType as T, legalize_call

onnx_reference = pytest.importorskip("onnx.reference.ops.op_attention")

PRECISION = {"float16": 10, "float32": 1, "float64": 11}

#: (dtype, query heads, key/value heads, mask ("bool", "float", shape) or None, counts?, attrs)
CASES = [
    ("float32", 2, 2, None, False, {}),
    ("float32", 4, 2, None, False, {"is_causal": 1, "scale": 0.3}),
    ("float16", 4, 2, None, False, {"is_causal": 1}),
    ("float32", 2, 1, ("float", (3, 4)), False, {"softcap": 2.0, "num_outputs": 2,
                                                 "qk_matmul_output_mode": 1}),
    ("float32", 2, 2, ("bool", (2, 1, 3, 5)), False, {"num_outputs": 2,
                                                      "qk_matmul_output_mode": 3}),
    ("float32", 2, 2, ("bool", (5,)), False, {"is_causal": 1, "left_window_size": 2,
                                              "num_outputs": 2, "qk_matmul_output_mode": 2}),
    ("float32", 4, 2, None, True, {"is_causal": 1, "left_window_size": 1}),
    ("float16", 2, 2, ("float", (2, 3, 5)), True, {"softmax_precision": "float32",
                                                   "num_outputs": 2,
                                                   "qk_matmul_output_mode": 3}),
    ("float32", 2, 2, None, False, {"left_window_size": 1, "right_window_size": 0}),
]
IDS = [f"{c[0]}-{c[1]}q{c[2]}kv-{c[3] and c[3][0]}mask-{'counts' if c[4] else 'all'}-"
       f"{'-'.join(f'{k}={v}' for k, v in c[5].items())}" for c in CASES]


def _inputs(dtype, hq, hkv, mask, counts, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, hq, 3, 4)).astype(dtype)
    k = rng.standard_normal((2, hkv, 5, 4)).astype(dtype)
    v = rng.standard_normal((2, hkv, 5, 6)).astype(dtype)
    args, attrs = [q, k, v], {}
    m = None
    if mask is not None:
        kind, shape = mask
        m = (rng.random(shape) > 0.3 if kind == "bool"
             else rng.standard_normal(shape).astype(dtype))
        if kind == "bool":
            m[..., 0] = True  # keep the first key of each row attendable
        args.append(m)
        attrs["has_mask"] = 1
    n = np.array([3, 5], np.int64) if counts else None
    if counts:
        args.append(n)
    return args, attrs, m, n


def _reference(args, attrs):
    op = ops.get("attention")
    return op.reference(*args, **dict(op.normalize_attrs(attrs)))


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("dtype,hq,hkv,mask,counts,attrs", CASES, ids=IDS)
def test_reference_matches_onnx_reference(dtype, hq, hkv, mask, counts, attrs):
    args, extra, m, n = _inputs(dtype, hq, hkv, mask, counts)
    got = _as_tuple(_reference(args, {**attrs, **extra}))
    onnx_attrs = {k: v for k, v in attrs.items() if k not in ("num_outputs", "softmax_precision")}
    if "softmax_precision" in attrs:
        onnx_attrs["softmax_precision"] = PRECISION[attrs["softmax_precision"]]
    y, _, _, qk = onnx_reference._compute_attention(
        *args[:3], attn_mask=m, nonpad_kv_seqlen=n, _validate_attention25=False, **onnx_attrs)
    for g, e in zip(got, (y, qk)):
        assert g.dtype == e.dtype and g.shape == e.shape
        # float16: the same roundings, so the same values
        tol = dict(rtol=0, atol=0) if dtype == "float16" else dict(rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(g, e, **tol)


@pytest.mark.parametrize("dtype,hq,hkv,mask,counts,attrs", CASES, ids=IDS)
def test_legalization_matches_reference(dtype, hq, hkv, mask, counts, attrs):
    args, extra, _, _ = _inputs(dtype, hq, hkv, mask, counts, seed=1)
    attrs = {**attrs, **extra}
    expected = _as_tuple(_reference(args, attrs))
    func = legalize_call("attention", [T(a.shape, str(a.dtype)) for a in args], attrs)
    outs = [np.full(e.shape, np.nan, e.dtype) for e in expected]
    mb.tir.interpret(func, *args, *outs)
    for o, e in zip(outs, expected):
        np.testing.assert_allclose(o.astype("float64"), e.astype("float64"), rtol=1e-5,
                                   atol=1e-6 if dtype != "float16" else 1e-3)


def test_a_row_that_may_attend_no_key_gives_zeros_not_nan():
    # its softmax is exp(-inf - -inf) / ... = NaN; the kernel must zero the row
    args, extra, _, _ = _inputs("float32", 2, 2, ("bool", (3, 5)), False)
    args[3][1] = False
    func = legalize_call("attention", [T(a.shape, str(a.dtype)) for a in args], extra)
    y = np.full((2, 2, 3, 6), np.nan, "float32")
    mb.tir.interpret(func, *args, y)
    assert np.all(y[:, :, 1] == 0) and np.all(np.isfinite(y))
    np.testing.assert_allclose(y, _reference(args, extra), rtol=1e-5, atol=1e-6)


def test_infer_gives_y_and_the_scores():
    t = ops.get("attention").infer_type(
        [T((2, 4, 3, 8)), T((2, 2, 5, 8)), T((2, 2, 5, 6))], {"num_outputs": 2})
    assert t.fields == (T((2, 4, 3, 6)), T((2, 4, 3, 5)))


def _infer(types, **attrs):
    return ops.get("attention").infer_type(types, attrs)


def test_query_heads_must_group_onto_key_heads():
    with pytest.raises(OpShapeError, match="3 query heads do not group evenly onto 2 .* "
                       "Instead: give a multiple"):
        _infer([T((1, 3, 2, 4)), T((1, 2, 5, 4)), T((1, 2, 5, 4))])


def test_mask_longer_than_the_keys_is_an_error():
    with pytest.raises(OpShapeError, match="the mask .*covers 6 keys but there are only 5. "
                       "Instead: give a mask of at most 5"):
        _infer([T((1, 2, 2, 4)), T((1, 2, 5, 4)), T((1, 2, 5, 4)), T((2, 6), "bool")],
               has_mask=1)


def test_mask_of_another_float_dtype_is_an_error():
    with pytest.raises(OpDTypeError, match="must be bool or float32"):
        _infer([T((1, 2, 2, 4)), T((1, 2, 5, 4)), T((1, 2, 5, 4)), T((2, 5), "float16")],
               has_mask=1)


def test_valid_key_counts_do_not_combine_with_a_cache():
    with pytest.raises(OpAttributeError, match="do not combine"):
        _infer([T((2, 2, 2, 4)), T((2, 2, 5, 4)), T((2, 2, 5, 4)), T((2,), "int64")],
               past_length=3)


@pytest.mark.parametrize("attrs,match", [
    ({"qk_matmul_output_mode": 4}, "qk_matmul_output_mode=4 is not 0, 1, 2 or 3"),
    ({"left_window_size": -2}, "left_window_size=-2"),
    ({"softmax_precision": "int32"}, "softmax_precision='int32'"),
    ({"num_outputs": 3}, "num_outputs=3"),
], ids=["mode", "window", "precision", "outputs"])
def test_bad_attributes_name_themselves(attrs, match):
    with pytest.raises(OpAttributeError, match=match):
        _infer([T((1, 2, 2, 4)), T((1, 2, 5, 4)), T((1, 2, 5, 4))], **attrs)


def test_valid_key_counts_must_be_int64_one_per_batch_row():
    with pytest.raises(OpShapeError, match=r"valid-key counts are \(2,\) int32; give int64 of "
                       r"shape \(2,\)"):
        _infer([T((2, 2, 2, 4)), T((2, 2, 5, 4)), T((2, 2, 5, 4)), T((2,), "int32")])


def test_mask_whose_leading_axes_do_not_broadcast_is_an_error():
    with pytest.raises(OpShapeError, match="the mask's leading axes"):
        _infer([T((1, 2, 2, 4)), T((1, 2, 5, 4)), T((1, 2, 5, 4)), T((3, 5), "bool")],
               has_mask=1)
