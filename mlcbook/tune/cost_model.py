"""Cost models: rank candidate programs from their features, fastest first, before measuring.

    >>> model = XGBModel(seed=0)
    >>> model.fit(X, throughput)           # features of measured programs, higher = faster
    >>> scores = model.predict(X_new)      # higher = predicted faster
    >>> model.importances()                # {feature name: gain}

Three models share that interface:

* :class:`XGBModel` — gradient-boosted trees with a pairwise ranking objective
  (``rank:pairwise``): it learns which of two programs is faster, which is all a search
  needs, and is refit on every measurement so far after each round (online);
* :class:`RandomModel` — a score drawn at random: the baseline a model must beat;
* :class:`AnalyticModel` — a roofline-style estimate computed from the features, without
  training: time = arithmetic / (peak per lane x vector lanes x threads x the share of the
  FMA pipeline the unrolled tile keeps busy) + memory bytes / bandwidth. Deterministic and
  instant, for labs and for the first round, before any measurement.
"""

from __future__ import annotations

import numpy as np

from ..optional import require
from .errors import TuneArgumentError
from .features import FEATURE_NAMES


class CostModel:
    """Predicts a score per row of features; higher means faster."""

    name = "model"

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        """Learn from measured programs: ``y`` is their throughput (0 for failures)."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError


class RandomModel(CostModel):
    """Random scores: a search guided by it is random search."""

    name = "random"

    def __init__(self, seed: int = 0):
        self._rng = np.random.default_rng(seed)

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self._rng.random(len(X))


_INDEX = {n: k for k, n in enumerate(FEATURE_NAMES)}


class AnalyticModel(CostModel):
    """A roofline estimate (see the module docstring); ``cores``, ``lane_gflops`` (one
    float32 lane's peak, two FMA ports at ~3 GHz) and ``bandwidth`` (bytes/s) describe
    the machine."""

    name = "analytic"

    def __init__(self, cores: int = 2, lane_gflops: float = 12.0, bandwidth: float = 20e9,
                 fma_in_flight: int = 8):
        self.cores, self.lane_gflops = cores, lane_gflops
        self.bandwidth, self.fma_in_flight = bandwidth, fma_in_flight

    def estimate_seconds(self, X: np.ndarray) -> np.ndarray:
        X = np.atleast_2d(X)

        def col(name):
            return np.exp2(X[:, _INDEX[name]]) - 1.0

        flops = col("flops")
        lanes = np.maximum(col("store.vector_lanes"), 1.0)
        threads = np.clip(col("store.parallel"), 1.0, self.cores)
        # independent accumulators hide the FMA latency: a tile of fewer than
        # fma_in_flight vectors leaves the pipeline partly idle
        tile = np.maximum(col("store.unrolled"), 1.0)
        busy = np.minimum(1.0, tile / self.fma_in_flight)
        compute = flops / (self.lane_gflops * 1e9 * lanes * threads * busy)
        memory = col("bytes") / self.bandwidth
        return compute + memory

    def predict(self, X: np.ndarray) -> np.ndarray:
        return -np.log(self.estimate_seconds(X) + 1e-12)


class XGBModel(CostModel):
    """XGBoost trees trained to rank programs (``rank:pairwise``) on the measurements so far;
    before its first fit (nothing measured yet) it ranks by the ``prior`` model, the
    :class:`AnalyticModel` unless told otherwise (``prior=RandomModel()`` for AutoTVM's
    random first round)."""

    name = "xgboost"

    def __init__(self, seed: int = 0, rounds: int = 60, max_depth: int = 6,
                 prior: CostModel | None = None):
        # fail before any measurement, not at the first fit
        require("xgboost", "the XGBoost cost model (mb.tune, `mlcbook tune`)")
        self.seed, self.rounds, self.max_depth = seed, rounds, max_depth
        self.prior = prior or AnalyticModel()
        self._booster = None

    def fit(self, X: np.ndarray, y: np.ndarray) -> None:
        xgb = require("xgboost", "the XGBoost cost model (mb.tune, `mlcbook tune`)")
        X, y = np.asarray(X, float), np.asarray(y, float)
        if len(X) < 2 or np.ptp(y) == 0:
            return  # nothing to rank yet
        d = xgb.DMatrix(X, label=y / y.max(), feature_names=list(FEATURE_NAMES))
        d.set_group([len(X)])
        params = {"objective": "rank:pairwise", "max_depth": self.max_depth, "eta": 0.2,
                  "min_child_weight": 1, "subsample": 1.0, "seed": self.seed, "nthread": 1,
                  "verbosity": 0}
        self._booster = xgb.train(params, d, num_boost_round=self.rounds)

    @property
    def trained(self) -> bool:
        return self._booster is not None

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self._booster is None:
            return self.prior.predict(X)
        xgb = require("xgboost", "the XGBoost cost model (mb.tune, `mlcbook tune`)")
        return self._booster.predict(xgb.DMatrix(np.asarray(X, float),
                                                 feature_names=list(FEATURE_NAMES)))

    def importances(self) -> dict:
        """Total gain of each feature's splits (features never used are left out)."""
        if self._booster is None:
            return {}
        return dict(sorted(self._booster.get_score(importance_type="total_gain").items(),
                           key=lambda kv: -kv[1]))


MODELS = {"xgboost": XGBModel, "random": RandomModel, "analytic": AnalyticModel}


def make_model(model, seed: int = 0) -> CostModel:
    """A model from its name (``"xgboost"``, ``"random"``, ``"analytic"``) or as given."""
    if isinstance(model, CostModel):
        return model
    if model not in MODELS:
        raise TuneArgumentError(f"unknown cost model {model!r}; Instead: use one of "
                                f"{sorted(MODELS)} or a CostModel instance")
    return MODELS[model]() if model == "analytic" else MODELS[model](seed=seed)


__all__ = ["CostModel", "XGBModel", "RandomModel", "AnalyticModel", "make_model", "MODELS"]
