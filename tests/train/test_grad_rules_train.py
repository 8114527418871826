"""The gradient rules of the training-mode ops (mlcbook/train/grad_rules_train.py) against
central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

from mlcbook.graph import Constant, Function, Var
from mlcbook.graph.expr import Call
from mlcbook.ops import Attrs, TensorType
from mlcbook.train import gradient_rule
from mlcbook.train.gradcheck import max_gradient_error


def _loss(y, rng):
    r = Constant(rng.standard_normal(y.shape))
    return Call("sum", (Call("mul", (Call("mul", (y, y)), r)),), Attrs(keepdims=0))


@pytest.mark.parametrize("shape", [(3, 2, 4, 3), (5, 3), (2, 4, 5)])
def test_batch_norm_train_gradients_of_data_scale_and_bias(shape):
    rng = np.random.default_rng(sum(shape))
    c = shape[1]
    vs = {"x": Var("x", TensorType(shape, "float64")), "s": Var("s", TensorType((c,), "float64")),
          "b": Var("b", TensorType((c,), "float64"))}
    stats = (Constant(np.zeros(c), "m"), Constant(np.ones(c), "v"))
    y = Call("batch_norm_train", (vs["x"], vs["s"], vs["b"], *stats), Attrs(epsilon=1e-2))
    f = Function(list(vs.values()), _loss(y, rng))
    inputs = {"x": rng.standard_normal(shape) * 2 + 1, "s": rng.standard_normal(c),
              "b": rng.standard_normal(c)}
    assert max_gradient_error(f, inputs, ["x", "s", "b"]) < 1e-6


def test_batch_norm_train_gives_its_running_statistics_no_gradient():
    x = Var("x", TensorType((2, 3), "float64"))
    w = [Constant(np.ones(3)) for _ in range(4)]
    call = Call("batch_norm_train", (x, *w))
    grads = gradient_rule("batch_norm_train")(call, Constant(np.ones((2, 3))))
    assert grads[3] is None and grads[4] is None


@pytest.mark.parametrize("counter", [0, 5])
def test_dropout_gradient_uses_the_same_mask(counter):
    rng = np.random.default_rng(counter)
    x = Var("x", TensorType((4, 7), "float64"))
    y = Call("dropout", (x, Constant(np.int64(counter), "c")), Attrs(ratio=0.4, seed=2))
    f = Function([x], _loss(y, rng))
    assert max_gradient_error(f, {"x": rng.standard_normal((4, 7))}, ["x"]) < 1e-6
