"""Trainer.fit refuses a number of steps that is not a whole number, before any step."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError


@pytest.fixture(scope="module")
def trainer():
    t = mb.train.compile_step(mb.train.mlp((4, 3), batch=4, seed=0), "cross_entropy",
                              mb.train.SGD(0.1))
    t.data = mb.train.Batches(np.ones((8, 4), "float32"), np.array([0, 1, 2, 0] * 2), 4)
    return t


@pytest.mark.parametrize("steps", [2.5, -1, "10", True, None])
def test_fit_refuses_steps_that_are_not_a_whole_number(trainer, steps):
    before = trainer.step_count
    with pytest.raises(TrainingError, match=rf"fit\(steps\) takes a whole number of steps .*got "
                                            rf"{steps!r}.*Instead: e.g. trainer.fit\(100\)"):
        trainer.fit(steps)
    assert trainer.step_count == before


@pytest.mark.parametrize("steps", [0, 2, np.int64(1)])
def test_fit_runs_a_whole_number_of_steps(trainer, steps):
    assert len(trainer.fit(steps)) == steps
