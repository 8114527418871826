"""Every chapter-6 exercise: the solution earns full points, the stub zero, and plausible
wrong answers zero with a message that says what is wrong; the chapter's fusion driver with
the reference rule reproduces mb.graph.fuse_ops."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook import book
from mlcbook.grading.ch06 import (_reference_joins, fuse_by_rule, post_dominators, random_graph,
                                  random_steps)
from mlcbook.grading.grade import grade_notebook
from mlcbook.graph import Constant, Function, TensorType, Var, op
from mlcbook.ops import OpKind

from .conftest import notebook_functions

EXERCISES = {
    "06.fusion_rule": "joins",
    "06.fold_bn": "fold_bn",
    "06.lifetimes": "lifetimes_and_peak",
}


@pytest.fixture(scope="module")
def solution6() -> dict:
    return notebook_functions(book.chapter(6).solutions, definitions_only=True)


@pytest.fixture(scope="module")
def stub6() -> dict:
    return notebook_functions(book.chapter(6).exercises, definitions_only=True)


def test_chapter_has_these_exercises():
    assert [e.id for e in grading.exercises("06.")] == list(EXERCISES)
    assert sum(e.points for e in grading.exercises("06.")) == 7


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_earns_full_points(solution6, exercise_id):
    for seed in (None, 1, 2):
        result = grading.check(exercise_id, solution6[EXERCISES[exercise_id]], seed=seed)
        assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_earns_zero_not_implemented(stub6, exercise_id):
    result = grading.check(exercise_id, stub6[EXERCISES[exercise_id]])
    assert result.points == 0
    assert result.message.startswith("not implemented:")
    assert "NotImplementedError" in result.message


def test_student_notebook_grades_every_exercise_as_not_implemented():
    report = grade_notebook(book.chapter(6).exercises)
    assert report.cell_errors == [], [str(e) for e in report.cell_errors]
    assert [r.exercise for r in report.results] == list(EXERCISES)
    assert all(r.points == 0 and r.message.startswith("not implemented:")
               for r in report.results), [str(r) for r in report.results]


def _zero(exercise_id, answer):
    result = grading.check(exercise_id, answer)
    assert result.points == 0, str(result)
    assert "internal error" not in result.message, result.message
    return result.message


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
    message = _zero("06.fusion_rule", wrong)
    assert "never joins a conv/matmul" in message and "returned True, expected False" in message


def test_epilogue_that_takes_injective_ops_is_refused():
    def wrong(group, between, pdom):
        if group == OpKind.OUT_ELEMWISE_FUSABLE:
            return all(k <= OpKind.INJECTIVE for k in list(between) + [pdom])
        return _reference_joins(group, between, pdom)
    assert "takes only elementwise or broadcast ops after it" in _zero("06.fusion_rule", wrong)


def test_ignoring_the_ops_between_is_refused():
    def wrong(group, between, pdom):
        return _reference_joins(group, [], pdom)
    message = _zero("06.fusion_rule", wrong)
    assert "returned True, expected False" in message


def test_never_fusing_is_refused():
    message = _zero("06.fusion_rule", lambda group, between, pdom: False)
    assert "returned False, expected True" in message


def test_a_rule_that_returns_no_bool():
    assert "return True or False" in _zero("06.fusion_rule", lambda g, b, p: None)


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
    assert "epsilon is missing" in _zero("06.fold_bn", _fold(eps_used=0.0))


def test_fold_with_a_fixed_epsilon():
    message = _zero("06.fold_bn", _fold(eps_used=1e-5))
    assert "values differ" in message


def test_fold_forgetting_the_conv_bias():
    assert "the conv's own bias b was dropped" in _zero("06.fold_bn", _fold(bias=False))


def test_fold_forgetting_the_bias_shift():
    assert "the bias was not folded" in _zero("06.fold_bn", _fold(shift_b=False))


def test_fold_forgetting_the_mean():
    assert "the running mean was not subtracted" in _zero("06.fold_bn", _fold(mean=False))


def test_fold_not_scaling_the_weight():
    assert "the weight was not scaled" in _zero("06.fold_bn", _fold(scale_w=False))


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
    message = _zero("06.lifetimes", _life(output_to_end=False))
    assert "the output lives to the end of the run" in message


def test_lifetimes_with_the_input():
    assert "include the model's input x" in _zero("06.lifetimes", _life(include_x=True))


def test_peak_that_frees_inputs_before_the_step():
    message = _zero("06.lifetimes", _life(strict_peak=True))
    assert "a step needs its inputs and its output at the same time" in message


def test_random_steps_read_earlier_values():
    steps, sizes = random_steps(np.random.default_rng(3), 10)
    seen = {"x"}
    for out, ins in steps:
        assert set(ins) <= seen and ins
        seen.add(out)
    assert set(sizes) == {out for out, _ in steps}
