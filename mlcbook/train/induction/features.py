"""What structural induction sees: features of a *problem* (cheap statistics of its data)
and the structure *pattern* of a model's IR (depth, widths, op motifs).

    >>> problem_features(p)
    {'log2_samples': 8.9, 'inputs': 12, 'outputs': 4, 'classification': 1, 'linear_score': 0.62,
     'nonlinear_gain': 0.17, 'knn_score': 0.71, 'pca90': 0.83, 'balance': 0.97}
    >>> structure_of(mb.train.mlp((12, 32, 32, 4)))
    {'depth': 2, 'widths': (32, 32), 'params': 1604, 'motifs': {'gemm>relu': 2, 'relu>gemm': 2}}

``linear_score`` is the validation score of a ridge fit on the raw inputs (a quick linear
probe) and ``nonlinear_gain`` what 256 random ReLU features add to it: together they say
how far a problem is from linear. ``knn_score`` (5 nearest training neighbours) estimates
how separable the classes are locally, ``pca90`` the share of dimensions holding 90% of
the variance, ``balance`` the classes' entropy over its maximum. Scores are accuracy
(classification) or R^2 (regression).
"""

from __future__ import annotations

import numpy as np

from ...errors import InductionError
from ...graph.expr import Call, Function
from .problems import CLASSIFICATION, Problem

#: the problem features, in the order the structure model sees them
PROBLEM_FEATURES = ("log2_samples", "inputs", "outputs", "classification", "linear_score",
                    "nonlinear_gain", "knn_score", "pca90", "balance")


def score(problem: Problem, prediction: np.ndarray, y: np.ndarray) -> float:
    """Accuracy of ``prediction`` (logits) for classification, R^2 for regression."""
    if problem.kind == CLASSIFICATION:
        return float((prediction.argmax(axis=1) == y).mean())
    y = y.reshape(len(y), -1).astype(np.float64)
    resid = ((prediction.reshape(y.shape) - y) ** 2).sum()
    total = ((y - y.mean(axis=0)) ** 2).sum() or 1.0
    return float(1.0 - resid / total)


def _targets(problem: Problem, y: np.ndarray) -> np.ndarray:
    if problem.kind == CLASSIFICATION:
        return np.eye(problem.outputs)[y]
    return y.reshape(len(y), -1).astype(np.float64)


def _ridge_score(problem: Problem, f_train, f_val, lam=1e-2) -> float:
    a = np.hstack([f_train, np.ones((len(f_train), 1))])
    w = np.linalg.solve(a.T @ a + lam * np.eye(a.shape[1]), a.T @ _targets(problem,
                                                                           problem.y_train))
    pred = np.hstack([f_val, np.ones((len(f_val), 1))]) @ w
    return score(problem, pred, problem.y_val)


def _knn(x, targets, xv, k: int = 5) -> np.ndarray:
    """The mean target of each validation row's ``k`` nearest training rows."""
    d = (xv ** 2).sum(axis=1)[:, None] - 2 * xv @ x.T + (x ** 2).sum(axis=1)[None, :]
    near = np.argsort(d, axis=1)[:, :k]
    return targets[near].mean(axis=1)


def problem_features(problem: Problem, seed: int = 0) -> dict[str, float]:
    """The problem's features (:data:`PROBLEM_FEATURES`), computed from its data."""
    x, xv = problem.x_train.astype(np.float64), problem.x_val.astype(np.float64)
    if len(x) < 2 or len(xv) < 1:
        raise InductionError(f"problem {problem.name!r} has {len(x)} training and {len(xv)} "
                             "validation rows; features need at least 2 and 1. Instead: "
                             "give it more data")
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-8
    x, xv = (x - mu) / sd, (xv - mu) / sd
    linear = _ridge_score(problem, x, xv)
    w = np.random.default_rng(seed).standard_normal((x.shape[1], 256)) / np.sqrt(x.shape[1])
    nonlinear = _ridge_score(problem, np.maximum(x @ w, 0), np.maximum(xv @ w, 0),
                             lam=float(len(x)) / 8)
    knn = score(problem, _knn(x, _targets(problem, problem.y_train), xv), problem.y_val)
    var = np.sort(np.linalg.eigvalsh(np.cov(x, rowvar=False)))[::-1]
    pca90 = (np.searchsorted(np.cumsum(var) / var.sum(), 0.9) + 1) / x.shape[1]
    if problem.kind == CLASSIFICATION:
        p = np.bincount(problem.y_train, minlength=problem.outputs) / len(problem.y_train)
        balance = float(-(p[p > 0] * np.log(p[p > 0])).sum() / np.log(problem.outputs))
    else:
        balance = 1.0
    return {"log2_samples": round(float(np.log2(len(x) + len(xv))), 3),
            "inputs": int(x.shape[1]), "outputs": problem.outputs,
            "classification": int(problem.kind == CLASSIFICATION),
            "linear_score": round(linear, 4), "nonlinear_gain": round(nonlinear - linear, 4),
            "knn_score": round(knn, 4),
            "pca90": round(float(pca90), 4), "balance": round(balance, 4)}


def structure_of(model: Function) -> dict:
    """The structure pattern of a model's IR: its number of hidden layers, their widths,
    the parameter count, and how often each op follows another (``'gemm>relu'``)."""
    if not isinstance(model, Function):
        raise InductionError(f"structure_of takes a graph Function, got "
                             f"{type(model).__name__}")
    calls = list(model.calls())
    layers = [c for c in calls if c.op in ("gemm", "conv")]
    widths = tuple(int(c.type.shape[1]) for c in layers[:-1])
    motifs: dict[str, int] = {}
    for c in calls:
        for a in c.args:
            if isinstance(a, Call):
                key = f"{a.op}>{c.op}"
                motifs[key] = motifs.get(key, 0) + 1
    params = int(sum(w.data.size for w in model.weights.values()))
    return {"depth": len(widths), "widths": widths, "params": params,
            "motifs": dict(sorted(motifs.items()))}


__all__ = ["PROBLEM_FEATURES", "score", "problem_features", "structure_of"]
