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


@pytest.mark.parametrize("x", [np.ones((0, 4), "float32"), np.float32(1)])
def test_predict_refuses_no_rows(trainer, x):
    with pytest.raises(TrainingError, match=r"predict needs at least one row .*Instead: pass x "
                                            r"of shape \(rows, 4\)"):
        trainer.predict(x)


def test_accuracy_refuses_labels_that_do_not_match_the_rows(trainer):
    with pytest.raises(TrainingError, match=r"accuracy needs one label per row: x has shape "
                                            r"\(3, 4\), y \(2,\); Instead: pass y of shape \(3,\)"):
        trainer.accuracy(np.ones((3, 4), "float32"), np.array([0, 1]))


@pytest.mark.parametrize("state", [None, {}, {"params": {}}])
def test_load_state_dict_refuses_what_state_dict_did_not_make(trainer, state):
    with pytest.raises(TrainingError, match=r"load_state_dict takes what state_dict\(\) "
                                            r"returned .*Instead: trainer.load_state_dict"):
        trainer.load_state_dict(state)


@pytest.mark.parametrize("where,msg", [
    (lambda d, f: d, "is a folder"), (lambda d, f: d / "no" / "c.ckpt", "does not exist"),
    (lambda d, f: f / "c.ckpt", "is a file, not a folder"),
    (lambda d, f: d / ("c" * 300), "name of 300 bytes"), (lambda d, f: d / "a\0b", "NUL")])
def test_save_refuses_a_path_it_cannot_write(trainer, tmp_path, where, msg):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    with pytest.raises(TrainingError, match=rf"\[MLC-D001\] .*{msg}"):
        trainer.save(where(tmp_path, a_file))
