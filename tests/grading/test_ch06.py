"""Chapter 6's exercises: plausible wrong answers earn zero with a message that says what is
wrong; the chapter's fusion driver with the reference rule reproduces mb.graph.fuse_ops.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.grading.ch06 import (_reference_joins, fuse_by_rule, post_dominators, random_graph,
                                  random_steps)
from mlcbook.graph import Function, TensorType, Var, op
from mlcbook.ops import OpKind

from .conftest import zero


# --- the driver and the post-dominators the grader relies on ------------------------------------
def test_driver_with_the_reference_rule_reproduces_fuse_ops():
    rng = np.random.default_rng(7)
    for _ in range(150):
        g = random_graph(rng, calls=int(rng.integers(4, 13)))
        got = fuse_by_rule(g, _reference_joins)
        want = [[c.name for c in grp.calls] for grp in mb.graph.fuse_ops(g).groups]
        assert sorted(map(sorted, got)) == sorted(map(sorted, want)), g.script()


def test_post_dominators_of_a_diamond():
    x = Var("x", TensorType((4, 4)))
    a = op.exp(x, name="a")
    d = op.add(op.relu(a, name="b"), op.sigmoid(a, name="c"), name="d")
    assert post_dominators(Function([x], op.tanh(d, name="e"))) == {
        "a": "d", "b": "d", "c": "d", "d": "e", "e": None}


def test_random_graphs_have_every_kind_and_diamonds():
    rng = np.random.default_rng(0)
    kinds, shared = set(), 0
    for _ in range(20):
        g = random_graph(rng)
        calls = g.calls()
        kinds |= {mb.ops.get(c.op).kind for c in calls}
        uses = [id(a) for c in calls for a in c.args]
        shared += any(uses.count(id(c)) > 1 for c in calls)
    assert {OpKind.ELEMWISE, OpKind.BROADCAST, OpKind.INJECTIVE, OpKind.REDUCTION,
            OpKind.OUT_ELEMWISE_FUSABLE} <= kinds
    assert shared >= 10


# --- 06.fusion_rule ------------------------------------------------------------------------------
def test_elementwise_into_a_matmul_is_refused():
    def wrong(group, between, pdom):
        if group <= OpKind.BROADCAST and pdom == OpKind.OUT_ELEMWISE_FUSABLE:
            return True
        return _reference_joins(group, between, pdom)
    message = zero("06.fusion_rule", wrong)
    assert "never joins a conv/matmul" in message and "returned True, expected False" in message


def test_epilogue_that_takes_injective_ops_is_refused():
    def wrong(group, between, pdom):
        if group == OpKind.OUT_ELEMWISE_FUSABLE:
            return all(k <= OpKind.INJECTIVE for k in list(between) + [pdom])
        return _reference_joins(group, between, pdom)
    assert "takes only elementwise or broadcast ops after it" in zero("06.fusion_rule", wrong)


def test_ignoring_the_ops_between_is_refused():
    def wrong(group, between, pdom):
        return _reference_joins(group, [], pdom)
    message = zero("06.fusion_rule", wrong)
    assert "returned True, expected False" in message


def test_never_fusing_is_refused():
    message = zero("06.fusion_rule", lambda group, between, pdom: False)
    assert "returned False, expected True" in message


def test_a_rule_that_returns_no_bool():
    assert "return True or False" in zero("06.fusion_rule", lambda g, b, p: None)


# --- 06.fold_bn ----------------------------------------------------------------------------------
def _fold(eps_used=None, bias=True, mean=True, scale_w=True, shift_b=True):
    def fold_bn(W, b, scale, shift, mu, var, eps):
        e = eps if eps_used is None else eps_used
        s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + e)
        W2 = W * s[:, None, None, None] if scale_w else W.astype(np.float64)
        b2 = ((b if bias else 0) - (mu if mean else 0)) * s + shift if shift_b else b
        return W2.astype(np.float32), np.asarray(b2, np.float32)
    return fold_bn


def test_fold_reference_form_passes():
    assert grading.check("06.fold_bn", _fold()).passed


def test_fold_without_epsilon():
    assert "epsilon is missing" in zero("06.fold_bn", _fold(eps_used=0.0))


def test_fold_with_a_fixed_epsilon():
    message = zero("06.fold_bn", _fold(eps_used=1e-5))
    assert "values differ" in message


def test_fold_forgetting_the_conv_bias():
    assert "the conv's own bias b was dropped" in zero("06.fold_bn", _fold(bias=False))


def test_fold_forgetting_the_bias_shift():
    assert "the bias was not folded" in zero("06.fold_bn", _fold(shift_b=False))


def test_fold_forgetting_the_mean():
    assert "the running mean was not subtracted" in zero("06.fold_bn", _fold(mean=False))


def test_fold_not_scaling_the_weight():
    assert "the weight was not scaled" in zero("06.fold_bn", _fold(scale_w=False))


# --- 06.lifetimes --------------------------------------------------------------------------------
def _life(output_to_end=True, include_x=False, strict_peak=False):
    def lifetimes_and_peak(steps, sizes):
        life = {out: [k, k] for k, (out, _) in enumerate(steps)}
        if include_x:
            life["x"] = [0, 0]
        for k, (_, ins) in enumerate(steps):
            for n in ins:
                if n in life:
                    life[n][1] = k
        if output_to_end:
            life[steps[-1][0]][1] = len(steps)
        peak = max(sum(sizes.get(n, 0) for n, (a, b) in life.items()
                       if a <= k < b or (not strict_peak and k == b))
                   for k in range(len(steps)))
        return {n: tuple(v) for n, v in life.items()}, peak
    return lifetimes_and_peak


def test_lifetimes_reference_form_passes():
    assert grading.check("06.lifetimes", _life()).passed


def test_output_that_dies_at_its_step():
    message = zero("06.lifetimes", _life(output_to_end=False))
    assert "the output lives to the end of the run" in message


def test_lifetimes_with_the_input():
    assert "include the model's input x" in zero("06.lifetimes", _life(include_x=True))


def test_peak_that_frees_inputs_before_the_step():
    message = zero("06.lifetimes", _life(strict_peak=True))
    assert "a step needs its inputs and its output at the same time" in message


def test_random_steps_read_earlier_values():
    steps, sizes = random_steps(np.random.default_rng(3), 10)
    seen = {"x"}
    for out, ins in steps:
        assert set(ins) <= seen and ins
        seen.add(out)
    assert set(sizes) == {out for out, _ in steps}


# --- issue 31: holes a second student pass found ------------------------------------------------
def test_never_joining_a_reduction_is_refused():
    def wrong(group, between, pdom):
        if group <= OpKind.BROADCAST and pdom == OpKind.REDUCTION:
            return False
        return _reference_joins(group, between, pdom)
    assert "returned False, expected True" in zero("06.fusion_rule", wrong)


def test_fold_returning_float64_is_refused():
    def float64_fold(W, b, scale, shift, mean, var, eps):
        s = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + eps)
        return W * s[:, None, None, None], (b - mean) * s + shift
    assert "return two float32 arrays" in zero("06.fold_bn", float64_fold)


def test_letting_an_opaque_op_take_an_epilogue_is_refused():
    def wrong(group, between, pdom):
        if group == OpKind.OPAQUE:  # treated like a conv: takes what follows it
            return all(k <= OpKind.BROADCAST for k in list(between) + [pdom])
        return _reference_joins(group, between, pdom)
    assert "an opaque op fuses with nothing" in zero("06.fusion_rule", wrong)
