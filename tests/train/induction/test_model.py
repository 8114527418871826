"""The structure model on a corpus with a known rule (see fake.py)."""

import numpy as np
import pytest

from mlcbook.errors import InductionError, MissingDependencyError
from mlcbook.train.induction import Structure, fit, structure_features
from mlcbook.train.induction.model import SIZE_FEATURES, training_rows

from .fake import STARTS, corpus, features


def test_structure_features_count_the_irs_motifs():
    f = structure_features(Structure(3, 32, residual=True, norm=True), 10, 3)
    assert f["depth"] == 3 and f["log2_width"] == 5.0
    assert f["motif:gemm>layer_norm"] == 3 and f["motif:relu>add"] == 3
    assert "motif:gemm>tanh" not in f


def test_targets_are_relative_to_the_median_of_a_problem_and_seed():
    runs = corpus(families=2, problems=1, seeds=(0,))
    rows, y = training_rows(runs)
    assert len(rows) == len(runs) and "motif:relu>add" in rows[-1]
    for k in range(0, len(y), len(STARTS)):
        assert np.median(y[k:k + len(STARTS)]) == pytest.approx(0.0)


def test_the_model_recovers_the_rule():
    sm = fit(corpus())
    easy, hard = features(0.95), features(0.4)
    deep, linear = STARTS[-1], STARTS[0]
    assert sm.predict(easy, linear) > sm.predict(easy, deep)
    assert sm.predict(hard, deep) > sm.predict(hard, linear)
    assert sm.importances()["linear_score"] > 0.1


def test_explain_names_the_problem_feature_and_the_motifs():
    sm = fit(corpus())
    names = [name for name, _ in sm.explain(features(0.95), STARTS[0], top=3)]
    assert "linear_score" in names


def test_a_problem_blind_model_sees_structure_features_only():
    sm = fit(corpus(), problem_features=())
    assert sm.features[:3] == SIZE_FEATURES and "linear_score" not in sm.features


def test_rules_read_as_conditions_on_named_features():
    lines = fit(corpus(), trees=3).rules(trees=2).splitlines()
    assert lines[0].startswith("tree 0: if ") and "more trees" in lines[-1]
    assert any("linear_score" in ln for ln in lines)


def test_fit_needs_runs():
    with pytest.raises(InductionError, match="corpus is empty"):
        fit([])
    with pytest.raises(InductionError, match="at least 4"):
        fit(corpus()[:2])


def test_without_xgboost_fit_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "xgboost", None)
    with pytest.raises(MissingDependencyError, match=r"mlcbook\[tune\]"):
        fit(corpus())
