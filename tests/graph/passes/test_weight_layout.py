"""pack_weights: constant gemm weights are transposed and packed at compile time, and the
model still computes the same thing."""
import numpy as np
import pytest

from mlcbook.graph import Constant, Function, TensorType, Var, interpret, op
from mlcbook.graph.expr import Call, post_order
from mlcbook.rules.tile_size import register_tile
from mlcbook.graph.passes.weight_layout import pack_weights

RNG = np.random.default_rng(5)


def gemms(func):
    return [n for n in post_order(func.body) if isinstance(n, Call) and n.op == "gemm"]


def model(n_out: int, trans_b: int):
    x = Var("x", TensorType((6, 20)))
    shape = (n_out, 20) if trans_b else (20, n_out)
    w = Constant(RNG.standard_normal(shape).astype("float32"), name="fc.weight", owner="fc")
    b = Constant(RNG.standard_normal(n_out).astype("float32"), name="fc.bias", owner="fc")
    return Function([x], op.gemm(x, w, b, trans_b=trans_b, name="fc"))


@pytest.mark.parametrize("trans_b", [0, 1])
def test_wide_weight_is_packed_in_panels_of_the_tile_width(trans_b):
    f = model(256, trans_b)
    (g,) = gemms(pack_weights(f))
    p = register_tile(6, 256)[1]        # the schedule's tile width on this machine
    assert p < 256 and g.attrs["b_panel"] == p and g.attrs["trans_b"] == 0
    assert g.args[1].data.shape == (256 // p, 20, p)
    assert g.args[1].name == "fc.weight" and g.args[1].owner == "fc"
    x = RNG.standard_normal((6, 20)).astype("float32")
    np.testing.assert_allclose(interpret(pack_weights(f), x), interpret(f, x), rtol=1e-6)


def test_narrow_weight_is_only_transposed():
    (g,) = gemms(pack_weights(model(10, 1)))
    assert g.attrs["b_panel"] == 0 and g.attrs["trans_b"] == 0
    assert g.args[1].data.shape == (20, 10)


def test_weight_computed_at_run_time_is_left_alone():
    x, w = Var("x", TensorType((6, 20))), Var("w", TensorType((128, 20)))
    f = Function([x, w], op.gemm(x, w, trans_b=1))
    (g,) = gemms(pack_weights(f))
    assert g.attrs["trans_b"] == 1 and g.attrs["b_panel"] == 0
