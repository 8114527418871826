"""The structure model on a corpus with a known rule: problems with few inputs do best
with narrow layers, problems with many inputs with wide ones."""

import numpy as np
import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import FEATURES, fit, propose, synthetic
from mlcbook.train.induction.model import training_rows

WIDTHS = [(8,), (16,), (32,), (64,)]


def _features(inputs):
    return {"log2_samples": 9.0, "inputs": inputs, "outputs": 3, "classification": 1,
            "linear_score": 0.5, "nonlinear_gain": 0.1, "pca90": 0.9, "balance": 1.0}


def _corpus():
    rng = np.random.default_rng(0)
    runs = []
    for inputs in (4, 5, 6, 7, 30, 40, 50, 60):
        for w in WIDTHS:
            best = 8 if inputs < 20 else 64
            s = 0.9 - 0.1 * abs(np.log2(w[0]) - np.log2(best)) + rng.normal(0, 0.005)
            runs.append({"problem": f"p{inputs}", "features": _features(inputs),
                         "final": {"widths": list(w)}, "score": float(s)})
    return runs


def test_targets_are_relative_to_the_problems_median():
    x, y = training_rows(_corpus())
    assert x.shape == (32, len(FEATURES))
    for k in range(0, 32, 4):
        assert np.median(y[k:k + 4]) == pytest.approx(0.0)


def test_the_model_recovers_the_rule():
    sm = fit(_corpus())
    assert propose(sm, None, WIDTHS, features=_features(10)) == (8,)
    assert propose(sm, None, WIDTHS, features=_features(45)) == (64,)
    imp = sm.importances()
    # features constant over the corpus are never split on
    assert imp["balance"] == 0.0 and imp["linear_score"] == 0.0
    assert sum(imp.values()) == pytest.approx(1.0, abs=1e-3)


def test_rules_read_as_conditions_on_named_features():
    lines = fit(_corpus()).rules(trees=2).splitlines()
    assert lines[0].startswith("tree 0: if ") and "more trees" in lines[-1]
    assert any("inputs" in ln or "log2_width" in ln for ln in lines)


def test_fit_needs_runs():
    with pytest.raises(InductionError, match="corpus is empty"):
        fit([])
    with pytest.raises(InductionError, match="at least 4"):
        fit(_corpus()[:2])


def test_propose_needs_candidates():
    with pytest.raises(InductionError, match="no candidate"):
        propose(fit(_corpus()), synthetic(0, n=50), candidates=())
