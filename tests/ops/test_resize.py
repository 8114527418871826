"""resize, declared from its te compute, against onnx's reference implementation of Resize
(the oracle: written apart from mlcbook's coordinate helpers)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from mlcbook.ops import get

ReferenceEvaluator = pytest.importorskip("onnx.reference").ReferenceEvaluator

#: (shape, dtype, sizes, attributes); the scales are sizes / shape, as ONNX derives them
CASES = [
    ((1, 2, 3, 4), "float32", (1, 2, 7, 2), {"mode": "linear"}),
    ((2, 3, 4), "int8", (2, 5, 9), {"coordinate_transformation_mode": "asymmetric",
                                    "nearest_mode": "round_prefer_ceil"}),
    ((3, 4), "float16", (5, 4), {"mode": "linear",
                                 "coordinate_transformation_mode": "align_corners"}),
    ((1, 1, 3, 4), "float32", (1, 1, 2, 3), {"mode": "cubic", "cubic_coeff_a": -0.5,
                                             "exclude_outside": 1}),
    ((2, 4, 5), "float32", (2, 3, 3), {"coordinate_transformation_mode": "tf_crop_and_resize",
                                       "roi": ((0, 1), (0.4, 1.2), (-0.3, 0.6)),
                                       "extrapolation_value": 9.0, "mode": "linear"}),
    ((1, 7, 6), "float32", (1, 3, 2), {"mode": "linear", "antialias": 1}),
    ((1, 5, 6), "float64", (1, 8, 4), {"mode": "cubic", "antialias": 1,
                                       "coordinate_transformation_mode": "half_pixel_symmetric"}),
    ((2, 5), "float32", (2, 9), {"coordinate_transformation_mode": "pytorch_half_pixel",
                                 "nearest_mode": "ceil"}),
]


def resize_oracle(x, sizes, roi=None, **attrs):
    """onnx's reference Resize of ``x`` to ``sizes`` (and ``roi``: a start and an end per
    axis, for tf_crop_and_resize)."""
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    inputs = [helper.make_tensor_value_info("x", elem, x.shape),
              helper.make_tensor_value_info("roi", TensorProto.FLOAT, [2 * x.ndim]),
              helper.make_tensor_value_info("sizes", TensorProto.INT64, [x.ndim])]
    node = helper.make_node("Resize", ["x", "roi", "", "sizes"], ["y"], **attrs)
    graph = helper.make_graph([node], "resize", inputs,
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    starts, ends = zip(*(roi or ((0.0, 1.0),) * x.ndim))
    (y,) = ReferenceEvaluator(model).run(None, {
        "x": x, "roi": np.array(starts + ends, np.float32), "sizes": np.array(sizes, np.int64)})
    return y


@pytest.mark.parametrize("shape,dtype,sizes,attrs", CASES, ids=lambda c: str(c)[:40])
def test_resize_matches_onnx_reference(shape, dtype, sizes, attrs):
    rng = np.random.default_rng(0)
    x = (rng.integers(-4, 5, shape) if dtype == "int8" else rng.standard_normal(shape)) \
        .astype(dtype)
    scales = tuple(n / s for n, s in zip(sizes, shape))
    got = get("resize").reference(x, sizes=sizes, scales=scales, **attrs)
    want = resize_oracle(x, sizes, **attrs)
    assert got.dtype == x.dtype and got.shape == want.shape
    tol = 2e-3 if dtype == "float16" else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)
