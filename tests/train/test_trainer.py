"""The compiled training step: in-place updates, checkpoints that resume bit-identically,
and digits trained to the accuracy the issue asks for."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

import mlcbook as mb
from sklearn.datasets import load_digits
from mlcbook.errors import TrainingError


@pytest.fixture(scope="module")
def digits():
    return mb.train.digits_split(load_digits())


def test_checkpoint_resumes_bit_identically(tmp_path, digits):
    (x, y), _ = digits
    n, k = 8, 3
    opt = mb.train.Adam(lr=mb.train.Warmup(mb.train.Cosine(0.01, total_steps=n), 2))
    trainer = mb.train.compile_step(mb.train.mlp((64, 32, 10), batch=16, seed=3),
                                    "cross_entropy", opt, data=mb.train.Batches(x, y, 16, seed=5))
    losses = trainer.fit(k)
    path = trainer.save(tmp_path / "ckpt.zip")
    losses += trainer.fit(n - k)
    resumed = mb.train.load(path)
    assert resumed.step_count == k
    assert resumed.fit(n - k) == losses[k:]              # exactly, not approximately
    for name, value in trainer.params.items():
        np.testing.assert_array_equal(resumed.params[name], value)
    for name, value in trainer.state.items():
        np.testing.assert_array_equal(resumed.state[name], value)
    with zipfile.ZipFile(path) as z:
        assert sorted(z.namelist()) == ["arrays.npz", "checkpoint.json"]   # no pickle


def test_parameters_are_updated_in_place(digits):
    (x, y), _ = digits
    trainer = mb.train.compile_step(mb.train.mlp((64, 10), batch=8), "cross_entropy",
                                    mb.train.SGD(lr=0.1, momentum=0.5))
    w, m = trainer.params["fc1.weight"], trainer.state["fc1.weight.momentum"]
    before = w.copy()
    trainer.step(x[:8], y[:8])
    assert trainer.params["fc1.weight"] is w and trainer.state["fc1.weight.momentum"] is m
    assert not np.array_equal(w, before) and np.abs(m).sum() > 0
    assert len(trainer.executable.plan.outputs) == 1          # the step returns only the loss


def test_mlp_learns_digits(digits):
    (x, y), (x_test, y_test) = digits
    trainer = mb.train.compile_step(mb.train.mlp((64, 128, 10), batch=64, seed=0),
                                    "cross_entropy", mb.train.SGD(lr=0.1, momentum=0.9),
                                    data=mb.train.Batches(x, y, 64, seed=0))
    losses = trainer.fit(250)
    assert np.mean(losses[-20:]) < 0.2 * np.mean(losses[:5])
    assert trainer.accuracy(x_test, y_test) >= 0.95
    # the trained inference graph, exported, gives onnxruntime's same logits
    import onnxruntime as ort
    sess = ort.InferenceSession(mb.to_onnx(trainer.model()).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"input": x_test[:64]})
    np.testing.assert_allclose(logits, trainer.predict(x_test[:64]), rtol=1e-4, atol=1e-4)


def test_cnn_learns_digits():
    (x, y), (x_test, y_test) = mb.train.digits_split(load_digits(), image=True)
    schedule = mb.train.Warmup(mb.train.Cosine(5e-3, total_steps=200), warmup_steps=20)
    trainer = mb.train.compile_step(mb.train.cnn(batch=32, channels=(8, 16), seed=0),
                                    "cross_entropy", mb.train.Adam(lr=schedule),
                                    data=mb.train.Batches(x, y, 32, seed=0))
    trainer.fit(220)
    assert trainer.accuracy(x_test, y_test) >= 0.97


def test_state_dict_round_trip_and_errors(digits):
    (x, y), _ = digits
    trainer = mb.train.compile_step(mb.train.mlp((64, 10), batch=8), "cross_entropy",
                                    mb.train.Adam(lr=0.01), data=mb.train.Batches(x, y, 8))
    sd = trainer.state_dict()
    first = trainer.fit(2)
    trainer.load_state_dict(sd)
    assert trainer.fit(2) == first
    sd["params"].pop("fc1.bias")
    with pytest.raises(TrainingError, match="params differ"):
        trainer.load_state_dict(sd)
    with pytest.raises(TrainingError, match="data input"):
        trainer.step(x[:8])
    with pytest.raises(TrainingError, match="not an mlcbook checkpoint"):
        mb.train.load(__file__)


def test_compile_step_needs_an_optimizer():
    with pytest.raises(TrainingError, match="needs an optimizer"):
        mb.train.compile_step(mb.train.mlp((4, 2), batch=1))


@pytest.fixture(scope="module")
def small_trainer():
    return mb.train.compile_step(mb.train.mlp((4, 3), batch=4, seed=0), "cross_entropy",
                                 mb.train.SGD(0.1))


@pytest.mark.parametrize("labels,first", [([0, 1, 3, 2], "the first 3 at row 2"),
                                          ([-1, 0, 1, 2], "the first -1 at row 0"),
                                          ([0, 1, 2, 100], "the first 100 at row 3")])
def test_a_label_outside_the_classes_is_refused_before_the_step(small_trainer, labels, first):
    # the compiled loss would pick no class for it: a loss of 0 that teaches nothing
    before = {k: v.copy() for k, v in small_trainer.params.items()}
    x = np.ones((4, 4), "float32")
    with pytest.raises(TrainingError, match=rf"outside \[0, 3\), {first}.*Instead: map"):
        small_trainer.step(x, np.array(labels, "int64"))
    for k, v in small_trainer.params.items():
        np.testing.assert_array_equal(v, before[k])


def test_fit_refuses_a_batch_of_bad_labels(small_trainer):
    small_trainer.data = mb.train.Batches(np.ones((8, 4), "float32"),
                                          np.array([0, 1, 2, 3, 0, 1, 2, 3]), 4)
    with pytest.raises(TrainingError, match=r"label\(s\) outside \[0, 3\)"):
        small_trainer.fit(2)


def test_float_labels_are_refused_with_the_cast(small_trainer):
    with pytest.raises(TrainingError, match=r"integer class indices, got dtype float32.*astype"):
        small_trainer.step(np.ones((4, 4), "float32"), np.zeros(4, "float32"))


def test_labels_inside_the_classes_train(small_trainer):
    x = np.random.default_rng(0).standard_normal((4, 4)).astype("float32")
    loss = small_trainer.step(x, np.array([0, 1, 2, 2]))
    assert np.isfinite(loss) and loss > 0


def test_a_step_on_arrays_of_the_exact_input_types_binds_no_input_by_name(small_trainer,
                                                                        monkeypatch):
    # the arrays go to the kernels as they are: binding and checking 15 named inputs was
    # tens of microseconds of a small model's step, run on one thread while the others wait
    import mlcbook.graph.run.executable as executable

    def refuse(*args, **kwargs):
        raise AssertionError("the step bound its inputs by name")
    monkeypatch.setattr(executable, "bind_inputs", refuse)
    x = np.random.default_rng(1).standard_normal((4, 4)).astype("float32")
    assert np.isfinite(small_trainer.step(x, np.array([0, 1, 2, 0], "int64")))

