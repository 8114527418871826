"""Checkers for chapter 9, *Training*: gradient rules and an optimizer written in graph ops.

A gradient rule is judged by putting it in place of the library's rule for the duration of
the check (:func:`scratch_gradient`) and comparing ``mb.train.grad``'s gradients with
central finite differences in float64 on freshly drawn shapes; the optimizer by running its
graph for several steps against numpy. One helper is public because the notebook uses it:

* :func:`scratch_gradient` — a rule registered inside it is gone after it, and the
  library's own rule is back.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

from ..errors import MLCError
from .compare import Fail, NotImplementedAnswer, describe, expect_array, trial
from .registry import exercise


@contextlib.contextmanager
def scratch_gradient(op_name: str, rule) -> Iterator[None]:
    """Use ``rule`` as the gradient rule of ``op_name`` inside the block, then restore."""
    from .. import train
    saved = train.gradient_rule(op_name)
    train.register_gradient(op_name, replace=True)(rule)
    try:
        yield
    finally:
        if saved is None:
            train.unregister_gradient(op_name)
        else:
            train.register_gradient(op_name, replace=True)(saved)


def _rule(answer, name: str):
    if answer is None:
        raise NotImplementedAnswer(f"got None instead of your function {name}")
    if not callable(answer):
        raise Fail(f"expected your function {name}, got {type(answer).__name__}",
                   about_inputs=False)
    return answer


def _gradients(op_name: str, rule, build, arrays: dict, rng) -> tuple[list, list]:
    """(analytic gradients with ``rule`` in place, finite differences) of
    ``sum(build(*inputs) * R)`` for a random R, in float64."""
    from .. import train
    from ..graph import Constant, Function, Var, op
    from ..ops.types import TensorType
    xs = [Var(n, TensorType(a.shape, "float64")) for n, a in arrays.items()]
    y = build(*xs)
    loss = op.sum(op.mul(y, Constant(rng.standard_normal(y.shape))), keepdims=0)
    f = Function(xs, loss)
    names = list(arrays)
    with scratch_gradient(op_name, rule):
        try:
            got = train.analytic_gradients(f, arrays, names)
        except NotImplementedError:
            raise NotImplementedAnswer(f"your rule for {op_name!r} raised NotImplementedError; "
                                       "replace the `raise NotImplementedError` line") from None
        except MLCError as err:
            raise Fail(f"taking the gradient with your rule raised {type(err).__name__}: "
                       f"{err}") from None
        except Exception as err:  # noqa: BLE001 - the student's rule runs inside grad
            raise Fail(f"your rule raised {type(err).__name__}: {err}") from None
    want = [train.numeric_gradient(f, arrays, n) for n in names]
    return got, want


# --- 09.div_gradient -----------------------------------------------------------------------
def _div_cases(rng):
    n, m = (int(v) for v in rng.integers(2, 6, size=2))
    return [((n, m), (n, m)), ((n, m), (m,)), ((n, 1), (1, m)), ((m,), (n, m)), ((n, m), ())]


@exercise("09.div_gradient", points=3, answer="div_rule", title="The gradient rule of div, with broadcasting")
def _check_div(answer, rng):
    from ..graph import op
    rule = _rule(answer, "div_rule")
    cases = _div_cases(rng)
    for sa, sb in cases:
        a = rng.uniform(0.5, 2.0, sa) * rng.choice([-1, 1], sa)
        b = rng.uniform(0.5, 2.0, sb) * rng.choice([-1, 1], sb)
        with trial(f"a / b with a of shape {sa}, b of shape {sb}",
                   "an input that was broadcast gets the sum of its gradient over the axes "
                   "it was broadcast along: mb.train.graph_math.unbroadcast(g, shape)"
                   if sa != sb else None):
            got, want = _gradients("div", rule, lambda x, y: op.div(x, y), {"a": a, "b": b}, rng)
            for name, g, w in zip("ab", got, want):
                if g is None or not isinstance(g, np.ndarray):
                    raise Fail(f"the gradient for {name} is missing: return one expression "
                               "per input")
                expect_array(f"d loss / d {name}", np.asarray(g), w, rtol=1e-5, atol=1e-7)
    return f"matches finite differences on {len(cases)} pairs of shapes, broadcasting included"


# --- 09.momentum_sgd -----------------------------------------------------------------------
def _momentum_reference(p, g, buf, lr, mu):
    buf = mu * buf + g
    return p - lr * buf, buf


@exercise("09.momentum_sgd", points=3, answer="momentum_update", title="Momentum SGD as a graph")
def _check_momentum(answer, rng):
    from ..graph import Function, Tuple, Var, interpret
    from ..ops.types import TensorType
    if answer is None:
        raise NotImplementedAnswer("got None instead of your function momentum_update")
    shape = tuple(int(v) for v in rng.integers(2, 6, size=2))
    t = TensorType(shape, "float64")
    p, g, buf = Var("p", t), Var("g", t), Var("buf", t)
    lr, mu = float(rng.uniform(0.01, 0.2)), float(rng.uniform(0.5, 0.95))
    try:
        out = answer(p, g, buf, lr, mu)
    except NotImplementedError:
        raise NotImplementedAnswer("momentum_update raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except Exception as err:  # noqa: BLE001
        raise Fail(f"momentum_update raised {type(err).__name__}: {err}") from None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise Fail("momentum_update should return a pair (new p, new buf) of graph "
                   f"expressions, got {type(out).__name__}", about_inputs=False)
    try:
        f = Function((p, g, buf), Tuple(list(out)))
    except MLCError as err:
        raise Fail(f"the two results do not form a graph of p, g and buf: {err}") from None
    pv, bv = rng.standard_normal(shape), np.zeros(shape)
    steps = 4
    want_p, want_b = pv.copy(), bv.copy()
    with trial(f"{steps} steps, lr={lr:.3f}, momentum={mu:.3f}, " + describe(p=pv)):
        for _ in range(steps):
            gv, before = rng.standard_normal(shape), bv
            pv, bv = (np.asarray(v) for v in interpret(f, pv, gv, bv))
            want_p, want_b = _momentum_reference(want_p, gv, want_b, lr, mu)
            expect_array("the new buf", bv, want_b, rtol=1e-9, atol=1e-12, mistakes=[
                (lambda: mu * before, "the new buf must add the gradient: mu * buf + g")])
            expect_array("the new p", pv, want_p, rtol=1e-9, atol=1e-12)
    return f"matches PyTorch's momentum SGD for {steps} steps from a zero buffer"


# --- 09.fix_softmax_gradient ---------------------------------------------------------------
def _refuse(c, g):
    raise RuntimeError("it calls the library's own softmax gradient rule; write the fixed "
                       "rule yourself, from the broken one")


@contextlib.contextmanager
def _library_rule_refused(op_name: str) -> Iterator[None]:
    """Inside the block, the library's rule of ``op_name`` raises when called, however the
    answer reached it (a reference taken before the check, or its module): an answer that
    hands the work to the library's rule has not fixed anything."""
    from .. import train
    rule = train.gradient_rule(op_name)
    code = rule.__code__
    rule.__code__ = _refuse.__code__
    try:
        yield
    finally:
        rule.__code__ = code


@exercise("09.fix_softmax_gradient", points=2, answer="fixed_softmax_rule", title="Find the bug in a broken gradient")
def _check_softmax(answer, rng):
    from ..graph import op
    rule = _rule(answer, "fixed_softmax_rule")
    cases = [((int(rng.integers(2, 5)), int(rng.integers(3, 7))), -1),
             ((2, int(rng.integers(3, 6)), 3), 1), ((int(rng.integers(3, 8)),), 0)]
    for shape, axis in cases:
        x = rng.standard_normal(shape)
        with trial(f"softmax over axis {axis} of an input of shape {shape}"):
            with _library_rule_refused("softmax"):
                got, want = _gradients("softmax", rule, lambda v: op.softmax(v, axis=axis),
                                       {"x": x}, rng)
            expect_array("d loss / d x", np.asarray(got[0]), want[0], rtol=1e-5, atol=1e-7)
    return f"matches finite differences on {len(cases)} shapes and axes"


__all__ = ["scratch_gradient"]
