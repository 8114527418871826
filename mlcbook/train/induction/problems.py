"""Small learning problems for structural induction: scikit-learn's digits, and synthetic
classification and regression tasks drawn from a random *teacher* network, whose size
and difficulty (teacher depth, input scale of its nonlinearity, label noise) are knobs.

    >>> p = synthetic(seed=3, kind="classification", n=600, d=12, outputs=4, difficulty=0.5)
    >>> p.x_train.shape, p.outputs, p.kind
    ((480, 12), 4, 'classification')
    >>> p = digits(sklearn.datasets.load_digits(), n=600, seed=0)

A problem carries a train and a validation split; labels are int64 class indices
(classification) or float32 columns of shape ``(N, 1)`` (regression, standardized).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InductionError
from ..data import digits_split

CLASSIFICATION, REGRESSION = "classification", "regression"


@dataclass(frozen=True)
class Problem:
    """A named supervised problem with train and validation splits."""

    name: str
    kind: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray

    @property
    def outputs(self) -> int:
        """Classes (classification) or 1 (regression)."""
        if self.kind == CLASSIFICATION:
            return int(max(self.y_train.max(), self.y_val.max())) + 1
        return 1

    @property
    def loss(self) -> str:
        """The mb.train loss the problem is trained with."""
        return "cross_entropy" if self.kind == CLASSIFICATION else "mse"


def _split(x, y, val_fraction, rng):
    order = rng.permutation(len(x))
    n_val = int(round(len(x) * val_fraction))
    v, t = order[:n_val], order[n_val:]
    return x[t], y[t], x[v], y[v]


def synthetic(seed: int, kind: str = CLASSIFICATION, n: int = 600, d: int = 10,
              outputs: int = 3, difficulty: float = 0.5, val_fraction: float = 0.2) -> Problem:
    """A problem labelled by a random tanh teacher network. ``difficulty`` in [0, 1] sets the
    teacher's depth (1 to 3 hidden layers), how far into its nonlinearity the inputs reach,
    and the label noise (up to 10% flipped classes / 0.3 std of regression noise)."""
    if kind not in (CLASSIFICATION, REGRESSION):
        raise InductionError(f"synthetic: kind={kind!r} is not a problem kind. Instead: "
                             f"{CLASSIFICATION!r} or {REGRESSION!r}")
    if not 0.0 <= difficulty <= 1.0:
        raise InductionError(f"synthetic: difficulty={difficulty} must be in [0, 1]")
    if kind == CLASSIFICATION and outputs < 2:
        raise InductionError(f"synthetic: a classification problem needs outputs >= 2 "
                             f"classes, got {outputs}")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    depth = 1 + int(round(2 * difficulty))
    scale = 0.5 + 2.5 * difficulty
    h, width = x.astype(np.float64), max(8, 2 * d)
    for _ in range(depth):
        w = rng.standard_normal((h.shape[1], width)) * scale / np.sqrt(h.shape[1])
        h = np.tanh(h @ w)
    out = h @ rng.standard_normal((width, outputs if kind == CLASSIFICATION else 1))
    if kind == CLASSIFICATION:
        y = out.argmax(axis=1)
        flip = rng.random(n) < 0.1 * difficulty
        y[flip] = rng.integers(0, outputs, int(flip.sum()))
        y = y.astype(np.int64)
    else:
        out = out + rng.standard_normal(out.shape) * 0.3 * difficulty * out.std()
        y = ((out - out.mean()) / (out.std() or 1.0)).astype(np.float32)
    name = f"{kind[:3]}-s{seed}-n{n}-d{d}-o{outputs}-h{difficulty:g}"
    return Problem(name, kind, *_split(x, y, val_fraction, rng))


def digits(data, n: int | None = None, seed: int = 0) -> Problem:
    """scikit-learn's digits (``data = sklearn.datasets.load_digits()``), the first ``n``
    rows of a seeded shuffle if given; the validation split is digits_split's test split."""
    (x, y), (xv, yv) = digits_split(data, seed=seed)
    if n is not None:
        n_val = max(1, int(round(n * 0.2)))
        x, y, xv, yv = x[:n - n_val], y[:n - n_val], xv[:n_val], yv[:n_val]
    return Problem(f"digits-n{len(x) + len(xv)}-s{seed}", CLASSIFICATION, x, y, xv, yv)


__all__ = ["CLASSIFICATION", "REGRESSION", "Problem", "synthetic", "digits"]
