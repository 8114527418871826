"""deform_conv (ONNX's DeformConv), declared from its te compute: the reference and the
compiled kernel against a numpy oracle written out below, its errors, and its ONNX export
(the bias and the mask are optional, each alone or both)."""
import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpAttributeError, OpShapeError
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import TensorType as T
from mlcbook.ops import get


def _sample(img, y, x):
    """img at (y, x), bilinearly, each of the four taps 0 outside the image."""
    y0, x0 = math.floor(y), math.floor(x)
    total = 0.0
    for yy, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xx, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            if 0 <= yy < img.shape[0] and 0 <= xx < img.shape[1]:
                total += wy * wx * img[yy, xx]
    return total


def oracle(x, w, offset, bias=None, mask=None, strides=(1, 1), pads=(0, 0, 0, 0),
           dilations=(1, 1), group=1, offset_group=1):
    n, c = x.shape[:2]
    f, cg, kh, kw = w.shape
    oh, ow = offset.shape[2:]
    off = offset.reshape(n, offset_group, kh, kw, 2, oh, ow)
    msk = np.ones((n, offset_group, kh, kw, oh, ow)) if mask is None else \
        mask.reshape(n, offset_group, kh, kw, oh, ow)
    out = np.zeros((n, f, oh, ow))
    for b in range(n):
        for o in range(f):
            g = o // (f // group)
            for ci in range(cg):
                ch = g * cg + ci
                og = ch // (c // offset_group)
                for p in range(oh):
                    for q in range(ow):
                        for i in range(kh):
                            for j in range(kw):
                                y = p * strides[0] - pads[0] + i * dilations[0] + \
                                    off[b, og, i, j, 0, p, q]
                                xx = q * strides[1] - pads[1] + j * dilations[1] + \
                                    off[b, og, i, j, 1, p, q]
                                out[b, o, p, q] += w[o, ci, i, j] * msk[b, og, i, j, p, q] * \
                                    _sample(x[b, ch].astype(np.float64), y, xx)
    return out if bias is None else out + bias.reshape(1, -1, 1, 1)


def _case(seed, n=2, c=4, h=5, wd=6, f=6, k=(2, 3), out=(4, 4), offset_group=2,
          bias=True, mask=True):
    rng = np.random.default_rng(seed)
    arr = lambda *s: rng.standard_normal(s).astype(np.float32)   # noqa: E731
    ins = {"x": arr(n, c, h, wd), "w": arr(f, c // 2, *k),
           "offset": arr(n, offset_group * k[0] * k[1] * 2, *out) * 2.0}   # past the borders
    if bias:
        ins["b"] = arr(f)
    if mask:
        ins["mask"] = rng.uniform(0, 1, (n, offset_group * k[0] * k[1], *out)).astype(np.float32)
    return ins


# (pads (1, 0, 0, 0), dilations (2, 1) and the kernel (2, 3) give out (4, 4) from 5 x 6)
ATTRS = dict(strides=(1, 1), pads=(1, 0, 0, 0), dilations=(2, 1), group=2, offset_group=2)


def _graph(ins, **attrs):
    vs = [Var(k, T(a.shape, a.dtype.name)) for k, a in ins.items()]
    return Function(vs, op.deform_conv(*vs, **attrs))


def _want(ins):
    return oracle(ins["x"], ins["w"], ins["offset"], ins.get("b"), ins.get("mask"),
                  ATTRS["strides"], ATTRS["pads"], ATTRS["dilations"], ATTRS["group"],
                  ATTRS["offset_group"])


OPTIONAL = [dict(bias=False, mask=False), dict(bias=True, mask=False),
            dict(bias=False, mask=True), dict(bias=True, mask=True)]


@pytest.mark.parametrize("given", OPTIONAL, ids=str)
def test_reference_matches_the_oracle(given):
    ins = _case(0, **given)
    got = get("deform_conv").reference(*ins.values(), masked=int(given["mask"]), **ATTRS)
    np.testing.assert_allclose(got, _want(ins), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("given", OPTIONAL, ids=str)
def test_compiled_kernel_matches_the_oracle(given):
    ins = _case(1, **given)
    got = mb.compile(_graph(ins, masked=int(given["mask"]), **ATTRS))(*ins.values())
    np.testing.assert_allclose(got, _want(ins), rtol=1e-4, atol=1e-4)


def test_strided_kernel_of_one_group_matches_the_oracle():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((1, 3, 7, 7)), rng.standard_normal((2, 3, 3, 3))
    offset = rng.standard_normal((1, 18, 3, 3))
    got = get("deform_conv").reference(x, w, offset, strides=(2, 2))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, oracle(x, w, offset, strides=(2, 2)), rtol=1e-10)


def test_refuses_an_offset_of_the_wrong_shape_saying_which():
    types = [T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((1, 9, 3, 3))]
    with pytest.raises(OpShapeError, match=r"deform_conv: the offset has shape \(1, 9, 3, 3\); "
                                           r".*must be \(1, 18, 3, 3\). Instead"):
        get("deform_conv").infer_type(types, {})


def test_refuses_a_mask_of_the_wrong_shape():
    types = [T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((1, 18, 3, 3)), T((1, 18, 3, 3))]
    with pytest.raises(OpShapeError, match=r"deform_conv: the mask has shape \(1, 18, 3, 3\)"):
        get("deform_conv").infer_type(types, {"masked": 1})


def test_refuses_an_offset_group_that_does_not_divide_the_channels():
    types = [T((1, 3, 5, 5)), T((3, 3, 3, 3)), T((1, 36, 3, 3))]
    with pytest.raises(OpAttributeError, match="deform_conv: offset_group=2 must be a positive "
                                               "int dividing the 3 input channels. Instead"):
        get("deform_conv").infer_type(types, {"offset_group": 2})


def test_refuses_a_group_that_does_not_divide_the_channels():
    types = [T((1, 3, 5, 5)), T((3, 1, 3, 3)), T((1, 18, 3, 3))]
    with pytest.raises(OpAttributeError, match="deform_conv: group=2 must be a positive int"):
        get("deform_conv").infer_type(types, {"group": 2})


def test_refuses_a_kernel_shape_other_than_the_weights():
    types = [T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((1, 18, 3, 3))]
    with pytest.raises(OpShapeError, match=r"deform_conv: kernel_shape=\(2, 2\) disagrees"):
        get("deform_conv").infer_type(types, {"kernel_shape": (2, 2)})


def test_a_mask_passed_as_the_bias_says_to_mark_it():
    types = [T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((1, 18, 3, 3)), T((1, 9, 3, 3))]
    with pytest.raises(OpShapeError, match=r"deform_conv: the bias has shape \(1, 9, 3, 3\); "
                                           r"it must be \(3,\).*masked=1"):
        get("deform_conv").infer_type(types, {})


def test_refuses_3d_images():
    types = [T((1, 2, 4, 4, 4)), T((3, 2, 2, 2, 2)), T((1, 24, 3, 3, 3))]
    with pytest.raises(OpShapeError, match="deform_conv: x .* must be 4-D.*Instead: give 2-D"):
        get("deform_conv").infer_type(types, {})


def test_refuses_a_fifth_input_without_masked():
    types = [T((1, 2, 5, 5)), T((3, 2, 3, 3)), T((1, 18, 3, 3)), T((3,)), T((1, 9, 3, 3))]
    with pytest.raises(OpShapeError, match="deform_conv: 5 inputs with masked=0. Instead"):
        get("deform_conv").infer_type(types, {})


@pytest.mark.parametrize("given,places", [
    (dict(bias=False, mask=True), ["x", "w", "offset", "", "mask"]),
    (dict(bias=True, mask=False), ["x", "w", "offset", "b"]),
    (dict(bias=True, mask=True), ["x", "w", "offset", "b", "mask"])], ids=str)
def test_exports_one_deform_conv_node_that_onnxruntime_runs(given, places):
    ins = _case(3, **given)
    f = _graph(ins, masked=int(given["mask"]), **ATTRS)
    model = mb.to_onnx(f)
    (node,) = model.graph.node
    assert node.op_type == "DeformConv" and list(node.input) == places
    assert "masked" not in {a.name for a in node.attribute}
    want = interpret(f, *ins.values())
    np.testing.assert_array_equal(interpret(mb.from_onnx(model), *ins.values()), want)
    ort = pytest.importorskip("onnxruntime")
    (got,) = ort.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
