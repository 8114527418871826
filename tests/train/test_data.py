"""Digits and the batch iterator."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from sklearn.datasets import load_digits
from mlcbook.errors import TrainingError


def test_digits_split():
    (x, y), (xt, yt) = mb.train.digits_split(load_digits(), test_fraction=0.25, image=True)
    assert x.shape[1:] == (1, 8, 8) and x.dtype == np.float32 and y.dtype == np.int64
    assert len(x) + len(xt) == 1797 and len(xt) == 449
    assert 0 <= x.min() and x.max() <= 1 and set(np.unique(y)) == set(range(10))


def test_batches_cover_an_epoch_and_restore():
    x, y = np.arange(10.0).reshape(10, 1), np.arange(10)
    b = mb.train.Batches(x, y, batch_size=3, seed=1)
    seen = np.concatenate([b.next()[1] for _ in range(3)])
    assert len(set(seen)) == 9 and b.epoch == 0
    state = b.state_dict()
    after = [b.next()[1].tolist() for _ in range(3)]
    assert b.epoch == 1
    b.load_state_dict(state)
    assert [b.next()[1].tolist() for _ in range(3)] == after


def test_batches_errors():
    with pytest.raises(TrainingError, match="rows"):
        mb.train.Batches(np.zeros((3, 1)), np.zeros(2), 1)
    with pytest.raises(TrainingError, match="batch_size"):
        mb.train.Batches(np.zeros((3, 1)), np.zeros(3), 4)


def test_digits_split_needs_the_sklearn_bunch():
    with pytest.raises(TrainingError, match="load_digits"):
        mb.train.digits_split(np.zeros((3, 64)))
