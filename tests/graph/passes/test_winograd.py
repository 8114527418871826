import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.passes import convert_layout, winograd_convs
from mlcbook.graph.passes.winograd import MIN_FLOPS
from mlcbook.ops import TensorType

rng = np.random.default_rng(0)


def _conv_relu(c, k, hw, stride=1, weight_const=True):
    x = Var("x", TensorType((1, c, hw, hw)))
    w = rng.standard_normal((k, c, 3, 3)).astype("float32") * 0.1
    b = rng.standard_normal(k).astype("float32")
    wv = Constant(w, "w") if weight_const else Var("w", TensorType(w.shape))
    y = op.relu(op.conv(x, wv, Constant(b, "b"), pads=(1, 1, 1, 1), strides=(stride, stride)))
    return Function([x] if weight_const else [x, wv], y)


def _ops(f):
    return [c.op for c in f.calls()]


def test_a_3x3_conv_becomes_the_three_winograd_ops_and_computes_the_same():
    f = _conv_relu(32, 32, 24)
    g = winograd_convs(convert_layout(f), min_flops=0)
    assert _ops(g) == ["to_blocked", "winograd_input", "winograd_product", "winograd_output",
                       "add", "relu", "from_blocked"]
    x = rng.standard_normal((1, 32, 24, 24)).astype("float32")
    np.testing.assert_allclose(mb.graph.interpret(g, x), mb.graph.interpret(f, x), rtol=1e-4,
                               atol=1e-4)


def test_a_conv_under_the_minimum_work_stays_direct():
    assert 2 * 32 * 32 * 9 * 24 * 24 < MIN_FLOPS
    assert "winograd_product" not in _ops(winograd_convs(convert_layout(_conv_relu(32, 32, 24))))


def test_strided_or_variable_weight_convs_stay_direct():
    for f in (_conv_relu(32, 32, 48, stride=2), _conv_relu(32, 32, 24, weight_const=False)):
        assert "winograd_product" not in _ops(winograd_convs(convert_layout(f), min_flops=0))


def test_the_compiled_winograd_model_matches_the_interpreter_with_its_epilogue_in_one_kernel():
    f = _conv_relu(32, 32, 23)              # odd map: the last row and column of tiles stick out
    exe = mb.compile(f, options={"winograd_min_flops": 0})
    names = [name for name, _ in exe.profile(np.zeros((1, 32, 23, 23), "float32"), repeat=1)]
    assert names == ["to_blocked", "winograd_input", "winograd_product",
                     "fused_winograd_output_add_relu", "from_blocked"]
    x = rng.standard_normal((1, 32, 23, 23)).astype("float32")
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-4)


def test_the_option_out_of_reach_compiles_the_conv_directly():
    exe = mb.compile(_conv_relu(32, 32, 23), options={"winograd_min_flops": float("inf")})
    assert not any(name.startswith("winograd") for name in exe.kernels)
