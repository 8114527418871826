"""Each legalization, run by the loop-IR interpreter, agrees with the op's numpy reference."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import LegalizeError
from mlcbook.ops import OpKind, TensorType as T, legalize_call

CASES = [
    ("relu", [T((3, 5))], {}),
    ("gelu", [T((2, 7))], {"approximate": "tanh"}),
    ("clip", [T((4, 4), "int32")], {"min": -2, "max": 3}),
    ("add", [T((2, 1, 4), "int8"), T((3, 1), "int8")], {}),
    ("div", [T((6,), "int32"), T((6,), "int32")], {}),
    ("pow", [T((5,)), T((5,), "int64")], {}),
    ("cast", [T((2, 3))], {"dtype": "bool"}),
    ("where", [T((2, 3), "bool"), T((3,)), T((2, 1))], {}),
    ("matmul", [T((2, 3, 4)), T((4, 5))], {}),
    ("matmul", [T((4,)), T((4,))], {}),
    ("gemm", [T((3, 4)), T((5, 4)), T(())], {"trans_b": 1, "alpha": 0.5, "beta": 2.0}),
    ("gemm", [T((3, 4)), T((2, 4, 3)), T((6,))], {"b_panel": 3}),
    ("conv", [T((1, 4, 6, 6)), T((6, 2, 3, 3)), T((6,))],
     {"group": 2, "strides": (2, 1), "pads": (1, 0, 1, 2), "dilations": (1, 2)}),
    ("conv", [T((2, 3, 9)), T((4, 3, 2))], {"pads": (1, 1)}),
    ("max_pool", [T((1, 2, 5, 5), "uint8")], {"kernel_shape": (2, 2), "strides": (2, 2),
                                              "ceil_mode": 1}),
    ("avg_pool", [T((1, 2, 5, 6))], {"kernel_shape": (3, 3), "pads": (1, 1, 1, 1),
                                     "strides": (2, 2), "count_include_pad": 1}),
    ("avg_pool", [T((1, 1, 7))], {"kernel_shape": (3,), "pads": (1, 1), "dilations": (2,)}),
    ("global_avg_pool", [T((2, 3, 4, 5))], {}),
    ("batch_norm", [T((2, 3, 4)), T((3,)), T((3,)), T((3,)), T((3,))], {"epsilon": 1e-3}),
    ("layer_norm", [T((2, 3, 4), "float16"), T((4,), "float16")], {"num_outputs": 3}),
    ("softmax", [T((2, 5, 3))], {"axis": 1}),
    ("log_softmax", [T((4, 6))], {}),
    ("mean", [T((3, 4, 5), "int32")], {"axes": (0, 2), "keepdims": 0}),
    ("max", [T((3, 4), "bool")], {"axes": (1,)}),
    ("transpose", [T((2, 3, 4))], {"perm": (1, 2, 0)}),
    ("concat", [T((2, 3)), T((2, 1)), T((2, 2))], {"axis": 1}),
    ("split", [T((7, 2))], {"sizes": (3, 4)}),
    ("slice", [T((9, 4))], {"starts": (7, 0), "ends": (-100, 4), "steps": (-3, 2)}),
    ("gather", [T((5, 3)), T((2, 2), "int64")], {"axis": 0}),
    ("gather_elements", [T((3, 4)), T((2, 3), "int64")], {"axis": 1}),
    ("gather_nd", [T((2, 3, 4), "int32"), T((2, 2, 1), "int64")], {"batch_dims": 1}),
    ("scatter_elements", [T((3, 4)), T((2, 3), "int64"), T((2, 3))], {"axis": 1}),
    ("scatter_elements", [T((3, 4), "int8"), T((2, 3), "int64"), T((2, 3), "int8")],
     {"axis": 1, "reduction": "add"}),
    ("scatter_nd", [T((4, 3)), T((3, 1), "int64"), T((3, 3))], {}),
    ("scatter_nd", [T((4, 3)), T((3, 1), "int64"), T((3, 3))], {"reduction": "max"}),
    ("scatter_nd", [T((4, 3)), T((3, 1), "int64"), T((3, 3))], {"reduction": "mul"}),
    ("bitshift", [T((2, 9), "int8"), T((9,), "int8")], {"direction": "LEFT"}),
    ("bitshift", [T((2, 9), "int8"), T((9,), "int8")], {"direction": "RIGHT"}),
    ("bitshift", [T((9,), "uint8"), T((9,), "uint8")], {"direction": "RIGHT"}),
    ("bitshift", [T((2, 9), "int64"), T((9,), "int64")], {"direction": "LEFT"}),
    ("hard_sigmoid", [T((3, 5))], {"alpha": 0.3, "beta": 0.4}),
    ("mod", [T((2, 7)), T((7,))], {"fmod": 0}),
    ("mod", [T((2, 7), "float64"), T((7,), "float64")], {"fmod": 1}),
    ("resize", [T((1, 2, 3, 4))], {"sizes": (1, 2, 7, 2), "scales": (1, 1, 7 / 3, 0.5),
                                   "mode": "linear"}),
    ("resize", [T((2, 3, 4), "int8")], {"sizes": (2, 5, 9), "scales": (1, 5 / 3, 2.25),
                                        "coordinate_transformation_mode": "asymmetric",
                                        "nearest_mode": "round_prefer_ceil"}),
    ("resize", [T((3, 4), "float16")], {"sizes": (5, 4), "scales": (5 / 3, 1),
                                        "mode": "linear",
                                        "coordinate_transformation_mode": "align_corners"}),
    ("resize", [T((1, 1, 3, 4))], {"sizes": (1, 1, 2, 3), "scales": (1, 1, 2 / 3, 0.75),
                                   "mode": "cubic", "cubic_coeff_a": -0.5,
                                   "exclude_outside": 1}),
    ("resize", [T((2, 4, 5))], {"sizes": (2, 3, 3), "scales": (1, 0.75, 0.6),
                                "coordinate_transformation_mode": "tf_crop_and_resize",
                                "roi": ((0, 1), (0.4, 1.2), (-0.3, 0.6)),
                                "extrapolation_value": 9.0, "mode": "linear"}),
    ("resize", [T((1, 7, 6))], {"sizes": (1, 3, 2), "scales": (1, 3 / 7, 1 / 3),
                                "mode": "linear", "antialias": 1}),
    ("grid_sample", [T((1, 1, 3, 4)), T((1, 2, 2, 2))], {"mode": "cubic",
                                                          "padding_mode": "reflection"}),
    ("affine_grid", [T((2, 3, 4))], {"size": (2, 1, 2, 3, 4), "align_corners": 1}),
    ("rnn", [T((3, 2, 2)), T((2, 3, 2)), T((2, 3, 3)), T((2, 6)), T((2, 2, 3))],
     {"direction": "bidirectional", "activations": ("relu", "softplus")}),
    ("gru", [T((2, 2, 3)), T((1, 9, 3)), T((1, 9, 3)), T((1, 18)), T((1, 2, 3))],
     {"clip": 0.5}),
    ("lstm", [T((2, 2, 3)), T((1, 8, 3)), T((1, 8, 2)), T((1, 16)), T((1, 2, 2)), T((1, 2, 2)),
              T((1, 6)), T((2,), "int64")], {"direction": "reverse"}),
    ("softsign", [T((3, 5), "float16")], {}),
    ("pad", [T((3, 4))], {"pads": (2, 1, 1, 2), "mode": "reflect"}),
    ("pad", [T((3, 4))], {"pads": (1, -1, 0, 3), "value": 7.0}),
    ("reshape", [T((2, 6))], {"shape": (3, -1)}),
    ("lrn", [T((2, 7, 3, 3))], {"size": 3, "alpha": 0.01, "beta": 0.75, "bias": 2.0}),
    ("lrn", [T((1, 5, 4))], {"size": 4}),
    ("shape", [T((2, 3, 4))], {"start": 1}),
    ("size", [T((2, 3))], {}),
    ("constant_of_shape", [], {"shape": (2, 3), "value": 1.5}),
    ("range", [], {"start": 1, "limit": 10, "delta": 3, "dtype": "int64"}),
    ("range", [], {"start": 1.0, "limit": 2.0, "delta": 0.25, "dtype": "float32"}),
    ("cumprod", [T((3, 5))], {"axis": 1}),
    ("cumprod", [T((4, 3), "int32")], {"axis": 0, "exclusive": 1, "reverse": 1}),
    ("cumsum", [T((2, 5), "float64")], {"axis": -1, "exclusive": 1}),
    ("bitwise_and", [T((2, 9), "int8"), T((9,), "int8")], {}),
    ("bitwise_or", [T((9,), "uint8"), T((2, 9), "uint8")], {}),
    ("bitwise_xor", [T((2, 9), "int64"), T((2, 1), "int64")], {}),
    ("bitwise_not", [T((9,), "int8")], {}),
    ("bitwise_not", [T((9,), "uint8")], {}),
    ("bitwise_not", [T((2, 9), "int32")], {}),
    ("bitcast", [T((2, 5))], {"dtype": "int32"}),
    ("bitcast", [T((5,), "int64")], {"dtype": "float64"}),
    ("bitcast", [T((5,), "int8")], {"dtype": "uint8"}),
    ("bitcast", [T((5,), "bool")], {"dtype": "uint8"}),
    ("max_pool_indices", [T((2, 3, 5, 5))], {"kernel_shape": (2, 3), "strides": (2, 1),
                                              "pads": (1, 0, 0, 1)}),
    ("max_pool_indices", [T((1, 2, 4, 5), "int8")], {"kernel_shape": (2, 2),
                                                      "storage_order": 1}),
    ("max_pool_indices", [T((2, 2, 7))], {"kernel_shape": (3,), "dilations": (2,),
                                          "ceil_mode": 1, "strides": (2,)}),
]


def _inputs(op, types, rng):
    arrays = []
    for t in types:
        if t.dtype == "bool":
            arrays.append(rng.random(t.shape) > 0.5)
        elif t.dtype.startswith("float"):
            arrays.append(rng.standard_normal(t.shape).astype(t.dtype))
        else:
            lo = 1 if op == "div" else (0 if t.dtype == "uint8" else -4)
            arrays.append(rng.integers(lo, 5, t.shape).astype(t.dtype))
    if op == "div":
        arrays[0] = arrays[0] - 2
        arrays[0][0] = -7
    if op == "gather":
        arrays[1] = np.array([[0, -1], [4, 2]], "int64")
    if op in ("gather_elements", "scatter_elements"):
        # duplicates in a row: the last update wins ("none") or they add up
        arrays[1] = np.array([[0, -1, 0], [3, 2, -4]], "int64")
    if op == "gather_nd":
        arrays[1] = np.array([[[2], [0]], [[-1], [1]]], "int64")
    if op == "scatter_nd":
        arrays[1] = np.array([[1], [-1], [1]], "int64")
    if op == "mod" and types[0].dtype.startswith("float"):
        # signs mixed, a zero divisor (NaN), infinities on both sides
        arrays[0] = np.array([[-4.3, 7.2, 5.0, 0.0, np.inf, -3.0, 1.0]] * 2, types[0].dtype)
        arrays[1] = np.array([2.1, -3.4, 0.0, -2.0, 2.0, np.inf, -np.inf], types[1].dtype)
    if op == "bitshift":
        # every shift in [-1, bits] (outside [0, bits) gives 0 or the sign), negative values
        bits = np.iinfo(types[0].dtype).bits
        arrays[1] = np.array([-1, 0, 1, 2, 3, bits - 2, bits - 1, bits, 5],
                             "int64").astype(types[1].dtype)  # uint8: -1 is 255
        arrays[0] = np.broadcast_to(np.array([-128, -7, -1, 0, 1, 3, 77, 127, 100], "int64")
                                    .astype(types[0].dtype), types[0].shape).copy()
    if op == "grid_sample":
        arrays[1] = arrays[1] * 2  # past the borders too
    if op == "lstm":
        arrays[-1] = np.array([1, 2], "int64")
    if op.startswith("bitwise"):
        # every bit pattern of the dtype: negative values, the extremes
        info = np.iinfo(types[0].dtype)
        arrays = [rng.integers(info.min, info.max, t.shape, dtype=t.dtype, endpoint=True)
                  for t in types]
    if op == "bitcast" and types[0].dtype == "int64":
        # the bits of ordinary doubles (small ints would read as denormals near 0)
        arrays[0] = (rng.standard_normal(types[0].shape) * 1e3).view("int64")
    if op == "max_pool_indices":
        # few distinct values: windows with equal maxima, where the first one must win
        arrays[0] = rng.integers(-2, 2, types[0].shape).astype(types[0].dtype)
    if op == "pow":
        arrays[0] = np.abs(arrays[0]) + 0.5
        arrays[1] = np.array([0, 1, 2, 3, -1], "int64")
    return arrays


@pytest.mark.parametrize("op,types,attrs", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_legalization_matches_reference(op, types, attrs):
    rng = np.random.default_rng(0)
    args = _inputs(op, types, rng)
    o = ops.get(op)
    want = o.reference(*args, **dict(o.normalize_attrs(attrs)))
    wants = want if isinstance(want, tuple) else (want,)
    func = legalize_call(op, types, attrs)
    mb.tir.verify(func)
    bound = [a.reshape(1) if a.ndim == 0 else a for a in args]
    outs = [np.zeros(p.shape, p.dtype) for p in func.outputs]
    mb.tir.interpret(func, *bound, *outs)
    for got, w in zip(outs, wants):
        tol = 2e-3 if w.dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got.reshape(w.shape), w, rtol=tol, atol=tol)


def test_legalization_names_the_primfunc_after_the_op():
    f = legalize_call("relu", [T((4,))])
    assert f.name == "relu" and [p.name for p in f.params] == ["a", "relu"]


def test_op_without_legalization_is_reported():
    ops.register("no_lowering_test", kind=OpKind.ELEMWISE, infer=lambda t, a: t[0],
                 reference=lambda x: x)
    try:
        with pytest.raises(LegalizeError, match="has no legalization"):
            legalize_call("no_lowering_test", [T((2,))])
    finally:
        ops.unregister("no_lowering_test")


def test_empty_tensors_cannot_be_legalized():
    with pytest.raises(LegalizeError, match="no elements"):
        legalize_call("relu", [T((0, 3))])
