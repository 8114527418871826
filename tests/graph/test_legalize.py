import numpy as np
import pytest

from mlcbook.errors import LegalizeError
from mlcbook.graph import (CallTIR, Constant, Function, TensorType, Tuple, Var, interpret, op,
                           post_order)
from mlcbook.graph.legalize import legalize
from mlcbook.tir import PrimFunc


def test_every_call_becomes_call_tir_and_results_agree():
    x = Var("x", TensorType((2, 6)))
    w = Constant(np.random.default_rng(0).standard_normal((6, 3)).astype("float32"), name="w")
    f = Function([x], op.softmax(op.relu(op.matmul(x, w))))
    mod = legalize(f)
    body_nodes = post_order(mod["main"].body)
    assert all(not hasattr(n, "op") for n in body_nodes)
    assert sum(isinstance(n, CallTIR) for n in body_nodes) == 3
    xv = np.random.default_rng(1).standard_normal((2, 6)).astype("float32")
    np.testing.assert_allclose(interpret(mod, xv), interpret(f, xv), rtol=1e-5)


def test_identical_calls_share_one_primfunc():
    x = Var("x", TensorType((4,)))
    f = Function([x], op.relu(op.neg(op.relu(x))))
    mod = legalize(f)
    prims = [k for k, v in mod.items() if isinstance(v, PrimFunc)]
    assert sorted(prims) == ["neg", "relu"]


def test_kept_ops_stay_calls():
    x = Var("x", TensorType((2, 3)))
    mod = legalize(Function([x], op.relu(op.reshape(x, shape=(3, 2)))), keep=("reshape",))
    assert any(getattr(n, "op", None) == "reshape" for n in post_order(mod["main"].body))


def test_empty_results_become_constants():
    x = Var("x", TensorType((2, 0)))
    f = Function([x], Tuple([op.relu(x), op.sum(x, axes=(1,), keepdims=0)]))
    mod = legalize(f)
    a, b = interpret(mod, np.zeros((2, 0), "float32"))
    assert a.shape == (2, 0) and b.tolist() == [0.0, 0.0]


def test_split_with_an_empty_piece():
    x = Var("x", TensorType((4,)))
    f = Function([x], op.split(x, sizes=(0, 4)))
    a, b = interpret(legalize(f), np.arange(4, dtype="float32"))
    assert a.shape == (0,) and b.tolist() == [0, 1, 2, 3]


def test_an_empty_input_that_data_depends_on_is_an_error():
    x = Var("x", TensorType((3, 0)))
    w = Var("w", TensorType((0, 2)))
    c = Var("c", TensorType((3, 2)))
    f = Function([x, w, c], op.gemm(x, w, c))
    with pytest.raises(LegalizeError, match="has no elements"):
        legalize(f)
