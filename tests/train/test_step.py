"""build_step: the checks a training step's graph gets before it is compiled."""

from __future__ import annotations

import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError
from mlcbook.graph import op


def test_an_update_that_is_not_elementwise_is_refused():
    class Transposing(mb.train.SGD):
        def update(self, p, g, state, lr):
            return op.transpose(op.transpose(op.sub(p, op.mul(lr, g)))), {}
    with pytest.raises(TrainingError, match="elementwise"):
        mb.train.build_step(mb.train.mlp((4, 3), batch=2), "cross_entropy",
                            Transposing(lr=0.1))
