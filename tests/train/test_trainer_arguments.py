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


def _onnx_mlp(batch):
    from mlcbook.frontend import examples
    return examples.mlp(batch=batch)


def test_compile_step_takes_the_module_from_onnx_returns():
    trainer = mb.train.compile_step(mb.from_onnx(_onnx_mlp(4)), "cross_entropy",
                                    mb.train.SGD(0.1))
    x = np.random.default_rng(0).standard_normal((4, 784)).astype("float32")
    first = trainer.step(x.reshape(trainer.model_ir.params[0].shape), np.array([0, 1, 2, 3]))
    assert np.isfinite(first) and trainer.step_count == 1


def test_compile_step_refuses_a_symbolic_batch_saying_how_to_fix_it():
    with pytest.raises(TrainingError, match=r"symbolic batch size .*Instead: import it with "
                                            r"mb.from_onnx\(model, batch_size=n\)"):
        mb.train.compile_step(mb.from_onnx(_onnx_mlp(None)), "cross_entropy", mb.train.SGD(0.1))


def test_compile_step_refuses_what_is_no_model():
    with pytest.raises(TrainingError, match="takes a graph Function or the IRModule "
                                            "mb.from_onnx returns, got str"):
        mb.train.compile_step("mlp.onnx", "cross_entropy", mb.train.SGD(0.1))
