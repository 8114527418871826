import numpy as np

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.passes import eliminate_common_subexpressions, simplify_chains


def _x(shape=(2, 3, 4)):
    return Var("x", mb.graph.TensorType(shape))


def _same(f, g, shape=(2, 3, 4)):
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    np.testing.assert_array_equal(mb.graph.interpret(g, a), mb.graph.interpret(f, a))


def test_a_chain_of_reshapes_is_one_reshape():
    x = _x()
    f = Function([x], op.relu(op.unsqueeze(op.flatten(op.reshape(x, shape=(6, 4))), axes=(0,))))
    g = simplify_chains(f)
    assert [c.op for c in g.calls()] == ["reshape", "relu"]
    _same(f, g)


def test_a_reshape_back_to_the_input_shape_disappears():
    x = _x()
    f = Function([x], op.relu(op.reshape(op.reshape(x, shape=(6, 4)), shape=(2, 3, 4))))
    g = simplify_chains(f)
    assert [c.op for c in g.calls()] == ["relu"]
    _same(f, g)


def test_two_transposes_compose_or_cancel():
    x = _x()
    f = Function([x], op.transpose(op.transpose(x, perm=(1, 0, 2)), perm=(0, 2, 1)))
    g = simplify_chains(f)
    assert [c.op for c in g.calls()] == ["transpose"]
    _same(f, g)
    f2 = Function([x], op.relu(op.transpose(op.transpose(x, perm=(2, 0, 1)), perm=(1, 2, 0))))
    assert [c.op for c in simplify_chains(f2).calls()] == ["relu"]
    _same(f2, simplify_chains(f2))


def test_common_subexpressions_are_computed_once():
    x = _x()
    f = Function([x], op.add(op.exp(op.relu(x)), op.exp(op.relu(x))))
    g = eliminate_common_subexpressions(f)
    assert [c.op for c in g.calls()] == ["relu", "exp", "add"]
    _same(f, g)


def test_different_attributes_or_named_weights_are_not_merged():
    x = _x((2, 2))
    w1 = Constant(np.eye(2, dtype="float32"), "w1")
    w2 = Constant(np.eye(2, dtype="float32"), "w2")
    f = Function([x], op.add(op.matmul(x, w1), op.add(op.matmul(x, w2),
                                                      op.leaky_relu(x, alpha=0.2))))
    f = Function([x], op.add(f.body, op.leaky_relu(x, alpha=0.1)))
    g = eliminate_common_subexpressions(f)
    assert [c.op for c in g.calls()].count("matmul") == 2
    assert [c.op for c in g.calls()].count("leaky_relu") == 2
