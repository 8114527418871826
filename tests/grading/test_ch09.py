"""Chapter 9's exercises: plausible wrong answers earn zero, and grading leaves the library's
gradient rules as they were.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.graph import Constant, Function, TensorType, Var, op
from mlcbook.train.graph_math import unbroadcast

from .conftest import zero


def test_div_without_unbroadcast_gets_zero():
    def rule(c, g):
        a, b = c.args
        return op.div(g, b), op.neg(op.div(op.mul(g, c), b))
    zero("09.div_gradient", rule)


def test_div_with_wrong_sign_gets_zero():
    def rule(c, g):
        a, b = c.args
        return unbroadcast(op.div(g, b), a.shape), unbroadcast(op.div(op.mul(g, c), b), b.shape)
    assert "values differ" in zero("09.div_gradient", rule)


def test_grading_restores_the_library_rule():
    before = mb.train.gradient_rule("div")
    zero("09.div_gradient", lambda c, g: (g, g))
    assert mb.train.gradient_rule("div") is before


def test_momentum_with_old_buffer_gets_zero():
    def update(p, g, buf, lr, mu):
        new_buf = op.add(op.mul(Constant(np.array(mu)), buf), g)
        return op.sub(p, op.mul(Constant(np.array(lr)), buf)), new_buf
    zero("09.momentum_sgd", update)


def test_momentum_without_gradient_in_buffer_gets_zero():
    def update(p, g, buf, lr, mu):
        new_buf = op.mul(Constant(np.array(mu)), buf)
        return op.sub(p, op.mul(Constant(np.array(lr)), op.add(new_buf, g))), new_buf
    assert "mu * buf + g" in zero("09.momentum_sgd", update)


def test_momentum_returning_one_value_gets_zero():
    assert "pair" in zero("09.momentum_sgd", lambda p, g, buf, lr, mu: p)


def test_the_broken_softmax_rule_gets_zero():
    def broken(c, g):
        return (op.mul(c, op.sub(g, op.sum(g, axes=(c.attrs["axis"],), keepdims=1))),)
    zero("09.fix_softmax_gradient", broken)


def test_softmax_rule_ignoring_axis_gets_zero():
    def rule(c, g):
        return (op.mul(c, op.sub(g, op.sum(op.mul(g, c), axes=(-1,), keepdims=1))),)
    zero("09.fix_softmax_gradient", rule)


# --- issue 31: holes a second student pass found ------------------------------------------------
def test_handing_the_work_to_the_library_rule_gets_zero():
    library = mb.train.gradient_rule("softmax")

    def fixed_softmax_rule(c, g):
        return library(c, g)
    assert "library's own softmax gradient" in zero("09.fix_softmax_gradient",
                                                    fixed_softmax_rule)


def test_the_library_rule_works_again_after_the_check():
    library = mb.train.gradient_rule("softmax")
    zero("09.fix_softmax_gradient", library)
    x = Var("x", TensorType((2, 3), "float64"))
    f = Function([x], op.sum(op.mul(op.softmax(x, axis=1), Constant(np.arange(6.0).reshape(2, 3))),
                             keepdims=0))
    values = {"x": np.random.default_rng(0).standard_normal((2, 3))}
    assert mb.train.max_gradient_error(f, values, ["x"]) < 1e-6
