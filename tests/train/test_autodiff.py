"""grad on whole models against hand-written numpy float64 gradients, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import NoGradientError, TrainingError
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.ops.types import TensorType

from ._reference import cnn_grads, mlp_grads


def loss_function(model: Function) -> Function:
    """model -> (input, labels) -> cross-entropy, weights kept as constants."""
    labels = Var("labels", TensorType((model.params[0].shape[0],), "int64"))
    return Function(model.params + (labels,), mb.train.cross_entropy(model.body, labels))


def to64(model: Function) -> Function:
    """The same model in float64 (weights and input)."""
    x = model.params[0]
    x64 = Var(x.name, TensorType(x.shape, "float64"))

    class Cast(mb.graph.ExprMutator):
        def visit_Var(self, v):
            return x64

        def visit_Constant(self, c):
            return Constant(c.data.astype(np.float64), c.name) if c.name else c
    return Function((x64,), Cast().visit(model.body), model.name)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_model_gradients_match_numpy(kind):
    rng = np.random.default_rng(0)
    if kind == "mlp":
        model = mb.train.mlp((10, 7, 6, 4), batch=5, seed=2)
        x = rng.standard_normal((5, 10))
    else:
        model = mb.train.cnn(batch=3, channels=(3, 4), image=4, classes=4, seed=2)
        x = rng.standard_normal((3, 1, 4, 4))
    y = rng.integers(0, 4, len(x))
    params = {k: c.data for k, c in model.weights.items()}
    want_loss, want = (mlp_grads(params, x, y, 3) if kind == "mlp"
                       else cnn_grads(params, x, y, 2))
    f = loss_function(to64(model))
    names = list(params)
    loss, *grads = mb.graph.interpret(mb.train.grad(f, wrt=names), x, y)
    assert float(loss) == pytest.approx(want_loss, rel=1e-12)
    for n, g in zip(names, grads):
        np.testing.assert_allclose(g, want[n], rtol=1e-9, atol=1e-12, err_msg=n)
    # the same gradients compiled to native code, in float32, weights as inputs (as in
    # training, where they change every step)
    f32 = mb.train.lift_weights(loss_function(model))
    exe = mb.compile(mb.train.grad(f32, wrt=names))
    loss32, *grads32 = exe(x.astype(np.float32), y, *params.values())
    assert float(loss32) == pytest.approx(want_loss, rel=1e-5)
    for n, g in zip(names, grads32):
        np.testing.assert_allclose(g, want[n], rtol=1e-3, atol=1e-5, err_msg=n)


def test_grad_returns_outputs_then_gradients_in_wrt_order():
    x = Var("x", TensorType((3,), "float64"))
    w = Var("w", TensorType((3,), "float64"))
    f = Function((x, w), op.sum(op.mul(op.mul(x, w), w), keepdims=0))
    loss, dw, dx = mb.graph.interpret(mb.train.grad(f, wrt=["w", "x"]),
                                      np.array([1.0, 2, 3]), np.array([2.0, 1, 0]))
    assert loss == 1 * 4 + 2 * 1 and list(dw) == [4.0, 4.0, 0.0] and list(dx) == [4.0, 1, 0]


def test_unreached_parameter_gets_zero_gradient():
    x = Var("x", TensorType((2,), "float64"))
    w = Var("w", TensorType((2,), "float64"))
    f = Function((x, w), op.sum(x, keepdims=0))
    _, dw = mb.graph.interpret(mb.train.grad(f, wrt=["w"]), np.ones(2), np.ones(2))
    assert list(dw) == [0.0, 0.0]


def test_op_without_rule_is_named():
    x = Var("x", TensorType((2,), "float64"))
    f = Function((x,), op.sum(op.tanh(x), keepdims=0))
    saved = mb.train.gradient_rule("tanh")
    mb.train.unregister_gradient("tanh")
    try:
        with pytest.raises(NoGradientError, match=r"'tanh'.*register_gradient"):
            mb.train.grad(f, wrt=["x"])
    finally:
        mb.train.register_gradient("tanh")(saved)


def test_pad_modes_without_rule():
    x = Var("x", TensorType((4,), "float64"))
    f = Function((x,), op.sum(op.pad(x, pads=(1, 1), mode="reflect"), keepdims=0))
    with pytest.raises(NoGradientError, match="reflect"):
        mb.train.grad(f, wrt=["x"])


def test_bad_requests():
    x = Var("x", TensorType((2,), "float64"))
    with pytest.raises(TrainingError, match="one element"):
        mb.train.grad(Function((x,), op.relu(x)), wrt=["x"])
    f = Function((x,), op.sum(x, keepdims=0))
    with pytest.raises(TrainingError, match="no input or weight named 'y'"):
        mb.train.grad(f, wrt=["y"])
    with pytest.raises(TrainingError, match="already has a gradient rule"):
        mb.train.register_gradient("relu")(lambda c, g: (g,))


def test_lift_weights_makes_parameters_inputs():
    model = mb.train.mlp((4, 3, 2), batch=1)
    lifted = mb.train.lift_weights(model)
    assert [p.name for p in lifted.params] == ["input", "fc1.weight", "fc1.bias",
                                               "fc2.weight", "fc2.bias"]
    assert lifted.weights == {}
