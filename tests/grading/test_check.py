"""mlcbook.grading: the registry, check(), CheckResult and the comparison helpers."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook.grading as grading
from mlcbook.errors import GradingError, MLCError
from mlcbook.grading.compare import Fail, call, expect_array


def test_check_result_text_and_mimebundle():
    result = grading.CheckResult("01.lnumpy_bmm", 0, 2, "not implemented: <stub>")
    assert str(result) == "[01.lnumpy_bmm] 0/2 — not implemented: <stub>"
    bundle = result._repr_mimebundle_()
    assert bundle["text/plain"] == str(result)
    assert bundle[grading.MIMETYPE] == {"exercise": "01.lnumpy_bmm", "points": 0,
                                        "max_points": 2, "message": "not implemented: <stub>"}
    assert "&lt;stub&gt;" in bundle["text/html"] and "0/2" in bundle["text/html"]
    assert grading.CheckResult.from_json(bundle[grading.MIMETYPE]) == result


def test_unknown_exercise_lists_known_ids():
    with pytest.raises(GradingError, match=r"unknown exercise '01.nope'; known exercises: .*"
                                           r"01\.lnumpy_bmm") as info:
        grading.check("01.nope", print)
    assert isinstance(info.value, MLCError) and "[MLC-B001]" in str(info.value)


def test_bad_exercise_id_and_points_are_rejected():
    with pytest.raises(GradingError, match="must look like '01.lnumpy_bmm'"):
        grading.exercise("lnumpy_bmm", points=1, title="x", answer="f")
    with pytest.raises(GradingError, match="points must be a positive int"):
        grading.exercise("99.scratch", points=0, title="x", answer="f")
    with pytest.raises(GradingError, match="answer must be the Python name the notebook defines"):
        grading.exercise("99.scratch", points=1, title="x", answer="not a name")


def test_registering_two_checkers_under_one_id_fails(scratch_exercise):
    @grading.exercise("99.scratch_dup", points=1, title="first", answer="f")
    def first(answer, rng):
        return "ok"

    with pytest.raises(GradingError, match="registered twice"):
        @grading.exercise("99.scratch_dup", points=1, title="second", answer="f")
        def second(answer, rng):
            return "ok"


def test_checks_are_reproducible_and_seedable(scratch_exercise):
    draws = []

    @grading.exercise("99.scratch_rng", points=1, title="rng", answer="f")
    def checker(answer, rng):
        draws.append(rng.integers(1 << 30))
        return "ok"

    grading.check("99.scratch_rng", None)
    grading.check("99.scratch_rng", None)
    grading.check("99.scratch_rng", None, seed=123)
    assert draws[0] == draws[1] != draws[2]


def test_a_bug_in_a_checker_is_reported_not_raised(scratch_exercise):
    @grading.exercise("99.scratch_bug", points=3, title="bug", answer="f")
    def checker(answer, rng):
        return {}["missing"]

    result = grading.check("99.scratch_bug", None)
    assert result.points == 0 and result.max_points == 3
    assert result.message.startswith("internal error in the checker (KeyError")


def test_call_reports_student_exceptions_with_their_line():
    def answer(A, C):
        C[0] = A[10]

    with pytest.raises(Fail, match=r"f raised IndexError: index 10 is out of bounds.*"
                                   r"\(in answer: C\[0\] = A\[10\]\)"):
        call(answer, "f", np.zeros(3), np.zeros(3), outputs=1)


def test_call_rejects_non_functions_and_mutated_inputs():
    with pytest.raises(Fail, match="expected your function f, got int 3"):
        call(3, "f")

    def mutates(A, C):
        A[0] = 1.0
        C[...] = 0

    with pytest.raises(Fail, match=r"f changed its input argument #1 \(shape \(2,\)\)"):
        call(mutates, "f", np.zeros(2), np.zeros(2), outputs=1)


def test_expect_array_messages():
    with pytest.raises(Fail, match=r"wrong shape: C has shape \(2, 3\), expected \(3, 2\)"):
        expect_array("C", np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(Fail, match=r"values differ: C\[1, 0\] = 5, expected 0 \(1 of 4"):
        expect_array("C", np.array([[0.0, 0], [5, 0]]), np.zeros((2, 2)))
    with pytest.raises(Fail, match="should be a numpy array, got list"):
        expect_array("C", [[0.0]], np.zeros((1, 1)))
    expect_array("C", np.ones(3) + 1e-7, np.ones(3))  # within tolerance


def test_expect_array_names_the_matching_mistake():
    with pytest.raises(Fail) as info:
        expect_array("C", -np.ones(2), np.ones(2),
                     mistakes=[(lambda: np.zeros(2), "zeros"), (lambda: -np.ones(2), "negated")])
    assert info.value.hint == "negated"
    assert str(info.value).endswith("\n  hint: negated")


# --- the run's seed (issue 31): fresh cases per grading run, reproducible ----------------------
def _plans_seen():
    seen = []

    def lifetimes_and_peak(steps, sizes):
        from mlcbook.grading.ch06 import _peak, _reference_lifetimes
        seen.append(list(steps))
        life = _reference_lifetimes(steps)
        return life, _peak(life, sizes, steps)
    return seen, lifetimes_and_peak


def test_a_grading_run_seed_draws_other_cases_and_is_recorded(monkeypatch):
    from mlcbook.grading.registry import SEED_ENV
    plans = {}
    for seed in ("11", "12", "11"):
        monkeypatch.setenv(SEED_ENV, seed)
        seen, answer = _plans_seen()
        result = grading.check("06.lifetimes", answer)
        assert result.message.endswith(f"[cases drawn with seed {seed}]"), result.message
        plans.setdefault(seed, []).append(seen)
    assert plans["11"][0] == plans["11"][1] and plans["11"][0] != plans["12"][0]


def test_outside_a_grading_run_the_cases_depend_on_the_exercise_only(monkeypatch):
    from mlcbook.grading.registry import SEED_ENV
    monkeypatch.delenv(SEED_ENV, raising=False)
    first, second = _plans_seen(), _plans_seen()
    grading.check("06.lifetimes", first[1])
    result = grading.check("06.lifetimes", second[1])
    assert first[0] == second[0] and "seed" not in result.message
