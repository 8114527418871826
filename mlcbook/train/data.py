"""Data for training: scikit-learn's bundled digits (no download) split for training, and
a batch iterator that shuffles by seed and can say, and restore, exactly where it is.

    >>> from sklearn.datasets import load_digits
    >>> (x_train, y_train), (x_test, y_test) = digits_split(load_digits())   # 8x8, 10 classes
    >>> batches = Batches(x_train, y_train, batch_size=64, seed=0)
    >>> x, y = batches.next()
    >>> state = batches.state_dict(); ...; batches.load_state_dict(state)   # same next batch
"""

from __future__ import annotations

import numpy as np

from ..errors import TrainingError


def digits_split(digits, test_fraction: float = 0.2, seed: int = 0, image: bool = False):
    """``((x_train, y_train), (x_test, y_test))`` from scikit-learn's bundled digits
    (``digits = sklearn.datasets.load_digits()``: 1797 8x8 images, 10 classes), scaled to
    [0, 1] as float32 (``(N, 64)``, or ``(N, 1, 8, 8)`` with ``image=True``), labels int64,
    split at random by ``seed``. (scikit-learn comes with the ``course`` and ``test`` extras,
    not with mlcbook itself, so the caller loads the data.)"""
    data, target = getattr(digits, "data", None), getattr(digits, "target", None)
    if data is None or target is None or np.shape(data)[1:] != (64,):
        raise TrainingError("digits_split takes what sklearn.datasets.load_digits() returns "
                            "(.data of shape (N, 64), .target). Instead: "
                            "mb.train.digits_split(sklearn.datasets.load_digits())")
    x = (np.asarray(data) / 16.0).astype(np.float32)
    if image:
        x = x.reshape(-1, 1, 8, 8)
    y = np.asarray(target).astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return (x[train], y[train]), (x[test], y[test])


class Batches:
    """Endless mini-batches of ``(x, y)``: each epoch a new permutation drawn from a
    generator seeded with ``seed``; a last partial batch is dropped (shapes are static)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, seed: int = 0,
                 shuffle: bool = True):
        if len(x) != len(y):
            raise TrainingError(f"Batches: x has {len(x)} rows but y has {len(y)}")
        if not 0 < batch_size <= len(x):
            raise TrainingError(f"Batches: batch_size={batch_size} must be in 1..{len(x)}")
        self.x, self.y = np.ascontiguousarray(x), np.ascontiguousarray(y)
        self.batch_size, self.seed, self.shuffle = batch_size, seed, shuffle
        self.rng = np.random.default_rng(seed)
        self.epoch, self.position = 0, 0
        self.order = self._new_order()

    def _new_order(self) -> np.ndarray:
        n = len(self.x)
        return self.rng.permutation(n) if self.shuffle else np.arange(n)

    @property
    def steps_per_epoch(self) -> int:
        return len(self.x) // self.batch_size

    def next(self) -> tuple[np.ndarray, np.ndarray]:
        """The next batch (a new epoch starts when the current one has no full batch left)."""
        if self.position + self.batch_size > len(self.x):
            self.epoch, self.position = self.epoch + 1, 0
            self.order = self._new_order()
        idx = self.order[self.position:self.position + self.batch_size]
        self.position += self.batch_size
        return self.x[idx], self.y[idx]

    __next__ = next

    def __iter__(self):
        return self

    def state_dict(self) -> dict:
        """Where the iterator is: epoch, position, this epoch's order and the generator's
        state (JSON-friendly except ``order``, an array)."""
        return {"epoch": self.epoch, "position": self.position, "order": self.order.copy(),
                "rng": self.rng.bit_generator.state, "batch_size": self.batch_size,
                "seed": self.seed, "shuffle": self.shuffle}

    def load_state_dict(self, state: dict) -> None:
        """Continue exactly where :meth:`state_dict` was taken."""
        if state["batch_size"] != self.batch_size:
            raise TrainingError(f"Batches: the state has batch_size {state['batch_size']}, "
                                f"this iterator {self.batch_size}")
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self.order = np.asarray(state["order"]).copy()
        self.rng.bit_generator.state = state["rng"]


__all__ = ["digits_split", "Batches"]
