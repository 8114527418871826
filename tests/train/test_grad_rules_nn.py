"""The gradient rules of conv_transpose, resize and attention against central finite
differences in float64, over their attributes."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.ops.types import TensorType

from .test_grad_rules import check


@pytest.mark.parametrize("stride,pad,dil,opad,group,bias", [
    (1, 0, 1, 0, 1, False), (2, 0, 1, 0, 1, True), (2, 1, 1, 1, 1, False),
    (1, 1, 2, 0, 2, True), (3, 2, 1, 2, 2, False), (2, 0, 2, 1, 1, True)])
def test_conv_transpose(stride, pad, dil, opad, group, bias):
    rng = np.random.default_rng(stride * 100 + pad * 10 + dil + opad + 7 * group)
    arrays = {"x": rng.standard_normal((2, 4, 3, 4)),
              "w": rng.standard_normal((4, 6 // group, 3, 2))}
    if bias:
        arrays["b"] = rng.standard_normal((6,))
    check(lambda *xs: op.conv_transpose(*xs, strides=(stride, 1), pads=(pad, 0, 0, pad),
                                        dilations=(dil, 1), output_padding=(opad, 0),
                                        group=group), arrays)


def test_conv_transpose_in_one_and_three_spatial_dimensions():
    rng = np.random.default_rng(3)
    check(lambda *xs: op.conv_transpose(*xs, strides=(2,), pads=(1, 0)),
          {"x": rng.standard_normal((1, 2, 5)), "w": rng.standard_normal((2, 3, 3)),
           "b": rng.standard_normal((3,))})
    check(lambda *xs: op.conv_transpose(*xs, strides=(2, 1, 2), output_padding=(1, 0, 0)),
          {"x": rng.standard_normal((1, 2, 2, 2, 3)), "w": rng.standard_normal((2, 2, 2, 1, 2))})


RESIZES = [
    ("nearest", "asymmetric", (4, 6), (2.0, 2.0)), ("nearest", "half_pixel", (3, 5), (1.5, 5 / 3)),
    ("nearest", "align_corners", (2, 2), (1.0, 2 / 3)),
    ("linear", "half_pixel", (4, 6), (2.0, 2.0)), ("linear", "align_corners", (5, 4), (2.5, 4 / 3)),
    ("linear", "pytorch_half_pixel", (1, 2), (0.5, 2 / 3)),
    ("linear", "asymmetric", (3, 3), (1.5, 1.0)), ("cubic", "half_pixel", (4, 5), (2.0, 5 / 3)),
    ("linear", "tf_crop_and_resize", (3, 4), (1.5, 4 / 3))]


@pytest.mark.parametrize("mode,coords,out,scales", RESIZES)
def test_resize(mode, coords, out, scales):
    x = np.random.default_rng(len(coords)).standard_normal((2, 1, 2, 3))
    roi = ((0, 1), (0, 1), (-0.5, 1.2), (0.1, 0.8)) if coords == "tf_crop_and_resize" else ()
    check(lambda v: op.resize(v, sizes=(2, 1) + out, scales=(1.0, 1.0) + scales, mode=mode,
                              coordinate_transformation_mode=coords, roi=roi,
                              extrapolation_value=5.0), {"x": x})


def test_resize_of_the_last_axis_only_and_antialiased_downsampling():
    x = np.random.default_rng(1).standard_normal((3, 8))
    check(lambda v: op.resize(v, sizes=(3, 5), scales=(1.0, 5 / 8), mode="linear"), {"x": x})
    check(lambda v: op.resize(v, sizes=(3, 3), scales=(1.0, 3 / 8), mode="cubic", antialias=1,
                              exclude_outside=1), {"x": x})


def _qkv(rng, hq=2, hkv=2, s=3, t=4):
    return {"q": rng.standard_normal((2, hq, s, 3)), "k": rng.standard_normal((2, hkv, t, 3)),
            "v": rng.standard_normal((2, hkv, t, 2))}


@pytest.mark.parametrize("attrs", [
    {}, {"is_causal": 1}, {"scale": 0.7, "softcap": 2.0}, {"is_causal": 1, "past_length": 1},
    {"left_window_size": 1, "right_window_size": 0}, {"softmax_precision": "float64"}],
    ids=lambda a: ",".join(a) or "plain")
def test_attention(attrs):
    check(lambda *xs: op.attention(*xs, **attrs), _qkv(np.random.default_rng(len(attrs))))


def test_attention_with_grouped_query_heads():
    check(lambda *xs: op.attention(*xs, is_causal=1), _qkv(np.random.default_rng(1), hq=4))


def test_attention_with_an_additive_mask_gets_the_masks_gradient():
    rng = np.random.default_rng(2)
    arrays = dict(_qkv(rng), m=rng.standard_normal((3, 3)))   # covers the first 3 of 4 keys
    check(lambda *xs: op.attention(*xs, has_mask=1), arrays)


def test_attention_with_a_boolean_mask_and_valid_key_counts():
    rng = np.random.default_rng(3)
    mask = Constant(rng.random((2, 1, 3, 4)) > 0.3)
    counts = Constant(np.array([4, 2], np.int64))
    check(lambda q, k, v: op.attention(q, k, v, mask, counts, has_mask=1), _qkv(rng))


@pytest.mark.parametrize("mode", [0, 2, 3])
def test_attention_with_the_scores_as_a_second_output(mode):
    rng = np.random.default_rng(4 + mode)

    def both(*xs):
        out = op.attention(*xs, num_outputs=2, qk_matmul_output_mode=mode, softcap=3.0)
        y, scores = out[0], out[1]
        return op.add(op.sum(y, axes=(3,)), op.mul(op.sum(scores, axes=(3,)), Constant(0.5)))
    check(both, _qkv(rng))


COMPILED = {
    "conv_transpose": (lambda x, w, b: op.conv_transpose(x, w, b, strides=(2, 2), pads=(1, 1, 0, 0),
                                                         output_padding=(1, 0), group=2),
                       {"x": (2, 4, 5, 5), "w": (4, 3, 3, 3), "b": (6,)}),
    "resize": (lambda x: op.resize(x, sizes=(2, 3, 8, 10), scales=(1.0, 1.0, 2.0, 2.0),
                                   mode="linear"), {"x": (2, 3, 4, 5)}),
    "attention": (lambda q, k, v: op.attention(q, k, v, is_causal=1),
                  {"q": (2, 4, 6, 8), "k": (2, 2, 6, 8), "v": (2, 2, 6, 8)})}


def compiled_like_interpreted(build, shapes: dict) -> None:
    """The float32 gradients of ``sum(build(*inputs) * R)``, compiled, equal the
    interpreter's: the backward graph is one mb.compile takes."""
    rng = np.random.default_rng(0)
    arrays = {n: rng.standard_normal(s).astype("float32") for n, s in shapes.items()}
    xs = [Var(n, TensorType(s, "float32")) for n, s in shapes.items()]
    y = build(*xs)
    loss = op.sum(op.mul(y, Constant(rng.standard_normal(y.shape).astype("float32"))),
                  keepdims=0)
    g = mb.train.grad(Function(xs, loss), wrt=list(shapes))
    want = mb.graph.interpret(g, **arrays)
    for got, ref in zip(mb.compile(g)(**arrays), want):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


@pytest.mark.parametrize("name", sorted(COMPILED))
def test_the_backward_graph_compiles_to_what_the_interpreter_computes(name):
    compiled_like_interpreted(*COMPILED[name])


@pytest.mark.parametrize("size,align", [((2, 1, 3, 4), 0), ((2, 3, 4, 2), 1),
                                        ((1, 1, 2, 3, 2), 0), ((2, 2, 3, 2, 2), 1)])
def test_affine_grid(size, align):
    r = len(size) - 2
    theta = np.random.default_rng(r + align).standard_normal((size[0], r, r + 1))
    check(lambda t: op.affine_grid(t, size=size, align_corners=align), {"theta": theta})
