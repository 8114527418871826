import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.passes import fold_batch_norm, fold_constants

from .._models import inputs, model


def _calls(func):
    return [c.op for c in func.calls()]


def test_fold_constants_evaluates_calls_of_constants_and_keeps_the_weight_name():
    x = Var("x", mb.graph.TensorType((2, 3)))
    w = Constant(np.arange(6, dtype="float32").reshape(3, 2), "fc.weight")
    f = Function([x], op.matmul(x, op.transpose(op.transpose(w))))
    g = fold_constants(f)
    assert _calls(g) == ["matmul"]
    folded = g.weights["fc.weight"]
    np.testing.assert_array_equal(folded.data, w.data)
    assert folded.owner == g.calls()[0].name


def test_fold_constants_gives_a_shared_weight_no_name():
    x = Var("x", mb.graph.TensorType((3, 3)))
    w = Constant(np.eye(3, dtype="float32"), "w")
    f = Function([x], op.add(op.matmul(x, op.neg(w)), op.matmul(x, w)))
    g = fold_constants(f)
    assert sorted(g.weights) == ["w"]      # the negated copy is a new, unnamed constant
    np.testing.assert_allclose(mb.graph.interpret(g, np.ones((3, 3), "float32")),
                               np.zeros((3, 3)))


def test_fold_constants_splits_a_constant_into_a_tuple_of_constants():
    x = Var("x", mb.graph.TensorType((2,)))
    c = Constant(np.arange(4, dtype="float32"))
    parts = op.split(c, axis=0, sizes=(2, 2))
    f = Function([x], op.add(x, parts[1]))
    g = fold_constants(f)
    assert _calls(g) == ["add"]
    np.testing.assert_array_equal(mb.graph.interpret(g, np.zeros(2, "float32")), [2, 3])


def test_fold_constants_leaves_calls_of_inputs_alone():
    f = model("mlp")
    assert _calls(fold_constants(f)) == _calls(f)


def test_fold_batch_norm_moves_it_into_the_conv_weights():
    f = model("residual")
    g = fold_batch_norm(f)
    assert "batch_norm" not in _calls(g)
    assert _calls(g).count("conv") == 2 and "mul" not in _calls(g)
    x = inputs(f)
    np.testing.assert_allclose(mb.graph.interpret(g, *x), mb.graph.interpret(f, *x),
                               rtol=1e-5, atol=1e-5)


def test_fold_batch_norm_without_a_conv_becomes_scale_and_shift():
    x = Var("x", mb.graph.TensorType((2, 3, 4, 4)))
    rng = np.random.default_rng(0)
    p = [Constant(rng.standard_normal(3).astype("float32")) for _ in range(3)]
    var = Constant(rng.uniform(0.5, 2, 3).astype("float32"))
    f = Function([x], op.batch_norm(op.relu(x), *p, var))
    g = fold_batch_norm(f)
    assert _calls(g) == ["relu", "mul", "add"]
    a = rng.standard_normal((2, 3, 4, 4)).astype("float32")
    np.testing.assert_allclose(mb.graph.interpret(g, a), mb.graph.interpret(f, a), rtol=1e-5,
                               atol=1e-6)


def test_fold_batch_norm_keeps_a_conv_that_something_else_reads():
    x = Var("x", mb.graph.TensorType((1, 2, 5, 5)))
    rng = np.random.default_rng(1)
    w = Constant(rng.standard_normal((2, 2, 3, 3)).astype("float32"), "w")
    c = op.conv(x, w, pads=(1, 1, 1, 1))
    p = [Constant(rng.standard_normal(2).astype("float32")) for _ in range(3)]
    bn = op.batch_norm(c, *p, Constant(np.ones(2, "float32")))
    f = Function([x], op.add(bn, c))
    g = fold_batch_norm(f)
    assert _calls(g).count("conv") == 1 and "batch_norm" not in _calls(g)
    np.testing.assert_array_equal(g.weights["w"].data, w.data)  # not rescaled
    a = rng.standard_normal((1, 2, 5, 5)).astype("float32")
    np.testing.assert_allclose(mb.graph.interpret(g, a), mb.graph.interpret(f, a), rtol=1e-5,
                               atol=1e-5)


def test_fold_constants_folds_shape_of_a_variable_and_calls_without_inputs():
    x = Var("x", mb.graph.TensorType((2, 3, 4)))
    target = op.concat(op.shape(x, end=1), Constant(np.array([-1], "int64")), axis=0)
    fill = op.constant_of_shape(shape=(2, 12), value=0.5)
    f = Function([x], op.add(op.reshape(x, shape=(2, 12)), fill))
    g = fold_constants(Function([x], target))
    assert isinstance(g.body, Constant) and g.body.data.tolist() == [2, -1]
    h = fold_constants(f)
    assert _calls(h) == ["reshape", "add"]
    assert h.body.args[1].data.tolist() == [[0.5] * 12] * 2
