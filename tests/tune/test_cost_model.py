"""Cost models: XGBoost ranks better than random on held-out programs; the analytic model
is deterministic; names are checked."""

import numpy as np
import pytest

from mlcbook.tune.cost_model import AnalyticModel, RandomModel, XGBModel, make_model
from mlcbook.tune.errors import TuneArgumentError
from mlcbook.tune.features import FEATURE_NAMES


def _spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _synthetic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, (n, len(FEATURE_NAMES)))
    speed = X[:, 3] * 2 + X[:, 5] - 0.5 * X[:, 12] + rng.normal(0, 0.5, n)
    return X, np.exp(speed / 5)


def test_xgboost_ranks_better_than_random():
    X, y = _synthetic(200, 0)
    model = XGBModel(seed=0)
    model.fit(X[:120], y[:120])
    learned = _spearman(model.predict(X[120:]), y[120:])
    guessed = _spearman(RandomModel(0).predict(X[120:]), y[120:])
    assert learned > 0.7 and learned > guessed + 0.5
    assert set(model.importances()) <= set(FEATURE_NAMES)


def test_analytic_model_is_deterministic_and_prefers_vector_code():
    X, _ = _synthetic(5, 1)
    m = AnalyticModel()
    assert np.array_equal(m.predict(X), m.predict(X))
    wide = X[:1].copy()
    wide[0, FEATURE_NAMES.index("store.vector_lanes")] = 3.17
    narrow = wide.copy()
    narrow[0, FEATURE_NAMES.index("store.vector_lanes")] = 0
    assert m.predict(wide)[0] >= m.predict(narrow)[0]


def test_unknown_model_name():
    with pytest.raises(TuneArgumentError, match="Instead: use one of"):
        make_model("gpt")
