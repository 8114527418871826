"""Learning problems for structural induction: the datasets scikit-learn bundles (digits,
iris, wine, breast cancer, diabetes) and seeded synthetic *families* (random teacher
networks, scikit-learn's make_classification / make_regression / friedman1, moons and
circles hidden among noise dimensions, and 8x8 image-like bar patterns). Each family
draws its size, dimension, classes and noise from the seed, so two seeds are two
different problems of the same kind.

    >>> p = make("moons", seed=3)
    >>> p.family, p.kind, p.x_train.shape
    ('moons', 'classification', (366, 3))
    >>> [p.name for p in suite(seeds=(0,))][:3]
    ['teacher-cls-s0', 'teacher-reg-s0', 'classification-s0']
    >>> p = synthetic(seed=3, kind="classification", n=600, d=12, outputs=4, difficulty=0.5)

A problem carries a train and a validation split, inputs standardized by the training
statistics; labels are int64 class indices (classification) or float32 columns of shape
``(N, 1)`` (regression, standardized). The scikit-learn families need scikit-learn (the
``course`` extra); the teacher families do not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InductionError
from ...optional import require
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
    family: str = ""

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


def _problem(name: str, family: str, kind: str, x, y, seed: int) -> Problem:
    """Split ``(x, y)`` 80/20 by ``seed``, standardize the inputs by the training rows
    (and regression targets overall)."""
    rng = np.random.default_rng(seed)
    x = np.asarray(x, np.float64)
    if kind == REGRESSION:
        y = np.asarray(y, np.float64).reshape(len(y), 1)
        y = ((y - y.mean()) / (y.std() or 1.0)).astype(np.float32)
    else:
        y = np.asarray(y).astype(np.int64)
    xt, yt, xv, yv = _split(x, y, 0.2, rng)
    mu, sd = xt.mean(axis=0), xt.std(axis=0) + 1e-8
    return Problem(name, kind, ((xt - mu) / sd).astype(np.float32), yt,
                   ((xv - mu) / sd).astype(np.float32), yv, family)


def _sklearn():
    return require("sklearn.datasets", "structural induction's scikit-learn problems")


def _hidden(rng, x2, d: int):
    """Low-dimensional points ``x2`` among ``d - 2`` noise dimensions, randomly rotated."""
    x = np.hstack([x2 / x2.std(axis=0), rng.standard_normal((len(x2), d - x2.shape[1]))])
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return x @ q


def _teacher(kind):
    def make_one(seed, rng):
        n, d = int(rng.integers(300, 801)), int(rng.integers(6, 33))
        outputs = int(rng.integers(2, 7)) if kind == CLASSIFICATION else 1
        p = synthetic(seed, kind, n=n, d=d, outputs=outputs,
                      difficulty=float(rng.uniform(0.1, 1.0)))
        x, y = (np.concatenate(pair) for pair in ((p.x_train, p.x_val), (p.y_train, p.y_val)))
        return kind, x, y
    return make_one


def _classification(seed, rng):
    d = int(rng.integers(6, 41))
    informative = int(rng.integers(2, min(d, 10) + 1))
    x, y = _sklearn().make_classification(
        n_samples=int(rng.integers(300, 801)), n_features=d, n_informative=informative,
        n_redundant=int(rng.integers(0, d - informative + 1)),
        n_classes=int(rng.integers(2, 5)), n_clusters_per_class=int(rng.integers(1, 3)),
        class_sep=float(rng.uniform(0.5, 2.0)), flip_y=float(rng.uniform(0.0, 0.1)),
        random_state=seed)
    return CLASSIFICATION, x, y


def _curves(maker: str):
    def make_one(seed, rng):
        x2, y = getattr(_sklearn(), maker)(n_samples=int(rng.integers(300, 801)),
                                           noise=float(rng.uniform(0.05, 0.3)),
                                           random_state=seed)
        return CLASSIFICATION, _hidden(rng, x2, int(rng.integers(2, 13))), y
    return make_one


def _regression(seed, rng):
    d = int(rng.integers(4, 41))
    x, y = _sklearn().make_regression(
        n_samples=int(rng.integers(300, 801)), n_features=d,
        n_informative=int(rng.integers(1, d + 1)), noise=float(rng.uniform(1.0, 60.0)),
        random_state=seed)
    return REGRESSION, x, y


def _friedman(seed, rng):
    x, y = _sklearn().make_friedman1(n_samples=int(rng.integers(300, 801)),
                                     n_features=int(rng.integers(5, 21)),
                                     noise=float(rng.uniform(0.0, 2.0)), random_state=seed)
    return REGRESSION, x, y


def _patterns(seed, rng):
    """8x8 images of a bar (horizontal, vertical, diagonal, anti-diagonal: the class) at a
    random place, blurred by noise."""
    n, classes = int(rng.integers(300, 801)), int(rng.integers(2, 5))
    y = rng.integers(0, classes, n)
    img = np.zeros((n, 8, 8))
    at = rng.integers(1, 7, n)
    for k in range(n):
        if y[k] == 0:
            img[k, at[k], :] = 1
        elif y[k] == 1:
            img[k, :, at[k]] = 1
        elif y[k] == 2:
            img[k] = np.eye(8, k=int(at[k]) - 4)
        else:
            img[k] = np.fliplr(np.eye(8, k=int(at[k]) - 4))
    img += rng.standard_normal(img.shape) * rng.uniform(0.3, 1.2)
    return CLASSIFICATION, img.reshape(n, 64), y


#: the synthetic families: family -> maker(seed, rng) -> (kind, x, y)
SYNTHETIC = {"teacher-cls": _teacher(CLASSIFICATION), "teacher-reg": _teacher(REGRESSION),
             "classification": _classification, "moons": _curves("make_moons"),
             "circles": _curves("make_circles"), "regression": _regression,
             "friedman": _friedman, "patterns": _patterns}
#: the datasets scikit-learn bundles: name -> (loader, kind); family "bundled"
BUNDLED = {"digits": ("load_digits", CLASSIFICATION), "iris": ("load_iris", CLASSIFICATION),
           "wine": ("load_wine", CLASSIFICATION),
           "breast_cancer": ("load_breast_cancer", CLASSIFICATION),
           "diabetes": ("load_diabetes", REGRESSION)}
FAMILIES = (*SYNTHETIC, "bundled")


def make(family: str, seed: int = 0) -> Problem:
    """Problem ``seed`` of a synthetic ``family`` (:data:`SYNTHETIC`), or a bundled
    dataset by name (:data:`BUNDLED`; ``seed`` picks the split; digits: 800 rows)."""
    if family in BUNDLED:
        loader, kind = BUNDLED[family]
        data = getattr(_sklearn(), loader)()
        x, y = data.data, data.target
        if family == "digits":
            keep = np.random.default_rng(seed).permutation(len(y))[:800]
            x, y = x[keep], y[keep]
        return _problem(family, "bundled", kind, x, y, seed)
    if family not in SYNTHETIC:
        raise InductionError(f"make: no problem family {family!r}. Instead: one of "
                             f"{sorted(SYNTHETIC)} or a bundled dataset {sorted(BUNDLED)}")
    # the family's index in the seed: seed 0 of two families draws different sizes
    rng = np.random.default_rng([seed, list(SYNTHETIC).index(family)])
    kind, x, y = SYNTHETIC[family](seed, rng)
    return _problem(f"{family}-s{seed}", family, kind, x, y, seed)


def suite(seeds=(0, 1), bundled: bool = True) -> list[Problem]:
    """Every synthetic family at each of ``seeds``, then (if ``bundled``) the five bundled
    datasets: the problems the shipped corpus is made of."""
    out = [make(f, s) for s in seeds for f in SYNTHETIC]
    return out + ([make(name) for name in BUNDLED] if bundled else [])


__all__ = ["CLASSIFICATION", "REGRESSION", "Problem", "synthetic", "digits", "SYNTHETIC",
           "BUNDLED", "FAMILIES", "make", "suite"]
