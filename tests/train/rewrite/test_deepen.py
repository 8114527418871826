import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.graph.expr import Call, Function, Var
from mlcbook.ops.types import Attrs, TensorType
from mlcbook.train.rewrite import deepen

from . import _models as M
from . import _onnx_models as O


@pytest.mark.parametrize("make,at", [(M.mlp, "relu1"), (M.residual, "res"), (M.mlp, "fc3"),
                                     (M.cnn, "relu1"), (M.batch_norm_cnn, "bn"),
                                     (O.matmul_mlp, "relu1"), (O.batched, "relu1"),
                                     (O.attention, "att"), (O.transformer, "res2")])
def test_deepen_keeps_the_outputs(make, at):
    f = make()
    x = M.inputs(f)
    r = deepen(f, at, hidden=4)
    assert r.tag == "exact" and len(r.model.weights) == len(f.weights) + 4
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_old_gradients_are_unchanged_and_only_the_zero_layer_learns_first():
    f = M.mlp()
    x = M.inputs(f)
    r = deepen(f, "relu1")
    new, old = M.gradients(r.model, x), M.gradients(f, x)
    for k in old:
        np.testing.assert_allclose(new[k], old[k], rtol=0, atol=1e-10, err_msg=k)
    assert np.abs(new["relu1.res.b.weight"]).max() > 0
    assert np.abs(new["relu1.res.a.weight"]).max() == 0


@pytest.mark.parametrize("make,at,opt", [
    (M.mlp, "relu2", mb.train.Adam(lr=0.01)),
    (M.cnn, "relu1", mb.train.SGD(lr=0.1, momentum=0.9))], ids=["mlp-adam", "cnn-momentum"])
def test_new_parameters_get_fresh_state_and_old_state_steps_as_before(make, at, opt):
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, opt, x, steps=2)
    r = deepen(f, at, state=state)
    for slot in opt.slots:
        assert not r.state[f"{at}.res.b.weight.{slot}"].any()
    if "step" in opt.slots:
        assert r.state[f"{at}.res.b.weight.step"] == 0 and r.state["fc1.weight.step"] == 2
    w_new, s_new = M.step(r.model, opt, r.state, x)
    w_old, s_old = M.step(f, opt, state, x)
    for k in w_old:
        np.testing.assert_allclose(w_new[k], w_old[k], rtol=0, atol=1e-10, err_msg=k)
    for k in s_old:
        np.testing.assert_allclose(s_new[k], s_old[k], rtol=0, atol=1e-10, err_msg=k)


def test_deepen_at_unknown_call():
    with pytest.raises(RewriteError, match="no call 'nope'"):
        deepen(M.mlp(), "nope")


def test_conv_block_keeps_old_gradients_and_opens_at_its_zero_conv():
    f = M.cnn()
    x = M.inputs(f)
    r = deepen(f, "relu2", hidden=2)
    assert r.model.weights["relu2.res.a.weight"].data.shape == (2, 4, 3, 3)
    assert r.model.weights["relu2.res.b.weight"].data.shape == (4, 2, 3, 3)
    new, old = M.gradients(r.model, x), M.gradients(f, x)
    for k in old:
        np.testing.assert_allclose(new[k], old[k], rtol=0, atol=1e-10, err_msg=k)
    assert np.abs(new["relu2.res.b.weight"]).max() > 0
    assert np.abs(new["relu2.res.a.weight"]).max() == 0


def test_deepen_needs_a_2d_3d_or_4d_value():
    x = Var("input", TensorType((2, 3, 4, 5, 6), "float64"))
    f = Function((x,), Call("relu", (x,), Attrs(), "relu"), "five_d")
    with pytest.raises(RewriteError, match=r"\(2, 3, 4, 5, 6\); a residual block .* 2-d .* "
                                           r"3-d .* or 4-d.*Instead:"):
        deepen(f, "relu")
