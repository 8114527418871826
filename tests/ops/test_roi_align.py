"""roi_align (ONNX's RoiAlign), declared from its te compute: the reference and the compiled
kernel against a numpy oracle written out below, its errors, and its ONNX export."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import (ArgumentError, OpAttributeError, OpDTypeError, OpShapeError,
                            UnsupportedModelError)
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import TensorType as T
from mlcbook.ops import get


def _bilinear(img, y, x):
    """img at (y, x), or None for a point more than a pixel outside (ONNX's RoiAlign rule:
    within a pixel outside, the border is read)."""
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return None
    y, x = min(max(y, 0.0), h - 1.0), min(max(x, 0.0), w - 1.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return [((1 - ly) * (1 - lx), img[y0, x0]), ((1 - ly) * lx, img[y0, x1]),
            (ly * (1 - lx), img[y1, x0]), (ly * lx, img[y1, x1])]


def oracle(x, rois, idx, mode="avg", out_h=1, out_w=1, ratio=2, scale=1.0,
           half_pixel=True):
    out = np.zeros((len(rois), x.shape[1], out_h, out_w))
    shift = 0.5 if half_pixel else 0.0
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        sy, sx = y1 * scale - shift, x1 * scale - shift
        hh, ww = y2 * scale - shift - sy, x2 * scale - shift - sx
        if not half_pixel:
            hh, ww = max(hh, 1.0), max(ww, 1.0)
        bh, bw = hh / out_h, ww / out_w
        for c in range(x.shape[1]):
            img = x[idx[r], c].astype(np.float64)
            for ph in range(out_h):
                for pw in range(out_w):
                    vals = []
                    for iy in range(ratio):
                        for ix in range(ratio):
                            taps = _bilinear(img, sy + ph * bh + (iy + 0.5) * bh / ratio,
                                             sx + pw * bw + (ix + 0.5) * bw / ratio)
                            if taps is None:
                                vals.append(0.0)
                            elif mode == "avg":
                                vals.append(sum(wt * v for wt, v in taps))
                            else:
                                vals.append(max(wt * v for wt, v in taps))
                    out[r, c, ph, pw] = np.mean(vals) if mode == "avg" else max(vals)
    return out


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, 6, 7)).astype(np.float32)
    # regions inside, across the borders, past them, and degenerate (x2 < x1)
    rois = np.array([[0.5, 1.0, 4.0, 5.5], [-2.0, -1.5, 3.0, 2.0], [5.0, 4.0, 9.0, 8.5],
                     [3.0, 2.0, 2.5, 2.2], [-6.0, -6.0, -3.0, -2.5]], np.float32)
    return x, rois, np.array([1, 0, 1, 0, 1], np.int64)


def _graph(x, rois, idx, **attrs):
    vs = [Var(n, T(a.shape, a.dtype.name)) for n, a in zip(("x", "rois", "idx"), (x, rois, idx))]
    return Function(vs, op.roi_align(*vs, **attrs))


CASES = [dict(mode="avg", output_height=3, output_width=2, sampling_ratio=2),
         dict(mode="max", output_height=2, output_width=3, sampling_ratio=3,
              spatial_scale=0.5),
         dict(mode="avg", output_height=2, output_width=2, sampling_ratio=1,
              coordinate_transformation_mode="output_half_pixel"),
         dict(mode="max", output_height=4, output_width=1, sampling_ratio=2,
              coordinate_transformation_mode="output_half_pixel")]


def _want(x, rois, idx, a):
    return oracle(x, rois, idx, a["mode"], a["output_height"], a["output_width"],
                  a["sampling_ratio"], a.get("spatial_scale", 1.0),
                  a.get("coordinate_transformation_mode", "half_pixel") == "half_pixel")


@pytest.mark.parametrize("attrs", CASES, ids=str)
def test_reference_matches_the_oracle(attrs):
    x, rois, idx = _inputs()
    got = get("roi_align").reference(x, rois, idx, **attrs)
    assert got.shape == (5, 3, attrs["output_height"], attrs["output_width"])
    np.testing.assert_allclose(got, _want(x, rois, idx, attrs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs", CASES, ids=str)
def test_compiled_kernel_matches_the_oracle(attrs):
    x, rois, idx = _inputs(1)
    got = mb.compile(_graph(x, rois, idx, **attrs))(x, rois, idx)
    np.testing.assert_allclose(got, _want(x, rois, idx, attrs), rtol=1e-5, atol=1e-5)


def test_float64_input_keeps_its_dtype():
    x, rois, idx = _inputs(2)
    x, rois = x.astype(np.float64), rois.astype(np.float64)
    got = get("roi_align").reference(x, rois, idx, output_height=2, output_width=2,
                                     sampling_ratio=2)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, oracle(x, rois, idx, out_h=2, out_w=2), rtol=1e-12)


def test_refuses_adaptive_sampling_saying_what_to_give():
    x, rois, idx = _inputs()
    with pytest.raises(OpAttributeError, match=r"roi_align: sampling_ratio=0 .*depends on the "
                                               r"rois' values.*Instead: give sampling_ratio"):
        get("roi_align").reference(x, rois, idx)


def test_refuses_an_unknown_mode():
    types = [T((1, 1, 4, 4)), T((2, 4)), T((2,), "int64")]
    with pytest.raises(OpAttributeError, match="roi_align: mode='min' is not one of avg, max. "
                                               "Instead"):
        get("roi_align").infer_type(types, {"mode": "min", "sampling_ratio": 2})


def test_refuses_rois_that_are_not_four_coordinates():
    types = [T((1, 1, 4, 4)), T((2, 5)), T((2,), "int64")]
    with pytest.raises(OpShapeError, match=r"roi_align: rois \(2, 5\) and batch_indices \(2,\) "
                                           r"do not fit. Instead: give rois of shape \(R, 4\)"):
        get("roi_align").infer_type(types, {"sampling_ratio": 2})


def test_refuses_float_batch_indices():
    types = [T((1, 1, 4, 4)), T((2, 4)), T((2,), "float32")]
    with pytest.raises(OpDTypeError, match="roi_align: the batch_indices has dtype float32"):
        get("roi_align").infer_type(types, {"sampling_ratio": 2})


def test_refuses_a_batch_index_past_the_images():
    x, rois, _ = _inputs()
    with pytest.raises(ArgumentError, match="roi_align"):
        get("roi_align").reference(x, rois, np.array([0, 1, 2, 0, 0]), sampling_ratio=2)


def test_exports_one_roi_align_node_that_onnxruntime_runs():
    x, rois, idx = _inputs(3)
    attrs = CASES[1]
    f = _graph(x, rois, idx, **attrs)
    model = mb.to_onnx(f)
    (node,) = model.graph.node
    assert node.op_type == "RoiAlign" and list(node.input) == ["x", "rois", "idx"]
    assert {a.name for a in node.attribute} >= {"mode", "sampling_ratio", "spatial_scale"}
    want = interpret(f, x, rois, idx)
    np.testing.assert_array_equal(interpret(mb.from_onnx(model), x, rois, idx), want)
    ort = pytest.importorskip("onnxruntime")
    (got,) = ort.InferenceSession(model.SerializeToString()).run(
        None, {"x": x, "rois": rois, "idx": idx})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)



def _model(opset, x_shape, n_rois, out_shape, **attrs):
    """A model of one RoiAlign node at ``opset``."""
    node = helper.make_node("RoiAlign", ["x", "rois", "idx"], ["y"], **attrs)
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
        helper.make_tensor_value_info("rois", TensorProto.FLOAT, (n_rois, 4)),
        helper.make_tensor_value_info("idx", TensorProto.INT64, (n_rois,))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset,half_pixel", [(13, False), (16, True)])
def test_import_takes_the_default_coordinate_mode_of_the_models_opset(opset, half_pixel):
    # RoiAlign before opset 16 had no coordinate_transformation_mode: it meant output_half_pixel
    x, rois, idx = _inputs(4)
    model = _model(opset, x.shape, 5, (5, 3, 2, 3), output_height=2, output_width=3,
                   sampling_ratio=2)
    got = interpret(mb.from_onnx(model), x, rois, idx)
    np.testing.assert_allclose(got, oracle(x, rois, idx, out_h=2, out_w=3,
                                           half_pixel=half_pixel), rtol=1e-5, atol=1e-5)


def test_import_refuses_adaptive_sampling_as_unsupported():
    with pytest.raises(UnsupportedModelError,
                       match=r"RoiAlign.*sampling_ratio=0 .*Instead: give sampling_ratio >= 1"):
        mb.from_onnx(_model(22, (1, 1, 4, 4), 2, (2, 1, 1, 1)))
