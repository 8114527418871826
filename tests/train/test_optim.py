"""Ten compiled training steps of SGD (momentum, Nesterov, weight decay), Adam and AdamW on
an MLP match a float64 numpy reference of the same updates: parameters and state."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError

from ._reference import adam, mlp_grads, sgd

STEPS = 10


def run_both(optimizer, reference, **hyper):
    model = mb.train.mlp((12, 16, 5), batch=8, seed=1)
    trainer = mb.train.compile_step(model, "cross_entropy", optimizer)
    rng = np.random.default_rng(0)
    params = {k: v.astype(np.float64) for k, v in trainer.params.items()}
    state = {k: {} for k in params}
    for step in range(STEPS):
        x = rng.standard_normal((8, 12)).astype(np.float32)
        y = rng.integers(0, 5, 8)
        lr = optimizer.schedule(step)
        want_loss, grads = mlp_grads(params, x, y, 2)
        got_loss = trainer.step(x, y)
        assert got_loss == pytest.approx(want_loss, rel=1e-5)
        params = {k: reference(params[k], grads[k], state[k], lr, **hyper) for k in params}
    return trainer, params, state


def close(got, want, rel=1e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    scale = max(np.abs(want).max(), 1e-30)
    assert np.abs(got - want).max() / scale < rel


def test_sgd_momentum_nesterov_weight_decay():
    opt = mb.train.SGD(lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    trainer, params, state = run_both(opt, sgd, momentum=0.9, nesterov=True,
                                      weight_decay=1e-3)
    for k in params:
        close(trainer.params[k], params[k])
        close(trainer.state[f"{k}.momentum"], state[k]["momentum"])


@pytest.mark.parametrize("kind", ["Adam", "AdamW"])
def test_adam(kind):
    wd = 0.05
    opt = getattr(mb.train, kind)(lr=mb.train.Cosine(0.01, total_steps=STEPS), weight_decay=wd)
    trainer, params, state = run_both(opt, adam, weight_decay=wd, decoupled=kind == "AdamW")
    for k in params:
        close(trainer.params[k], params[k])
        close(trainer.state[f"{k}.m"], state[k]["m"])
        close(trainer.state[f"{k}.v"], state[k]["v"])
        assert trainer.state[f"{k}.step"] == STEPS


def test_state_is_owned_by_its_parameter():
    model = mb.train.mlp((4, 3), batch=2)
    ts = mb.train.build_step(model, "cross_entropy", mb.train.Adam())
    assert ts.owned_by("fc1.weight") == {"m": "fc1.weight.m", "v": "fc1.weight.v",
                                         "step": "fc1.weight.step"}
    assert ("fc1.bias.v", "fc1.bias", "v") in ts.function.attrs["state_owners"]
    names = [p.name for p in ts.function.params]
    assert names[:3] == ["input", "labels", "lr"]
    assert mb.train.state_owner("fc1.weight.m", ts.params) == "fc1.weight"


def test_schedules():
    assert mb.train.StepLR(1.0, step_size=2, gamma=0.5)(5) == 0.25
    cos = mb.train.Cosine(1.0, total_steps=10, min_lr=0.1)
    assert cos(0) == 1.0 and cos(10) == pytest.approx(0.1) and cos(5) == pytest.approx(0.55)
    warm = mb.train.Warmup(mb.train.ConstantLR(0.4), warmup_steps=4)
    assert [warm(i) for i in range(5)] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.4])


def test_bad_optimizer_arguments():
    with pytest.raises(TrainingError, match="nesterov"):
        mb.train.SGD(lr=0.1, nesterov=True)
    with pytest.raises(TrainingError, match="learning rate"):
        mb.train.SGD(lr="fast").schedule


@pytest.mark.parametrize("make,msg", [
    (lambda: mb.train.SGD(0.1, momentum="0.9"), r"SGD: momentum='0.9' must be a number of 0 "
                                                r"or more; Instead: e.g. SGD\(momentum=0.0\)"),
    (lambda: mb.train.Adam(beta1="x"), r"Adam: beta1='x' must be a number in \[0, 1\)"),
    (lambda: mb.train.Adam(beta2=1.0), r"Adam: beta2=1.0 must be a number in \[0, 1\)"),
    (lambda: mb.train.Adam(eps=[1e-8]), r"Adam: eps=\[1e-08\] must be a number"),
    (lambda: mb.train.AdamW(weight_decay=float("nan")), r"AdamW: weight_decay=nan must be"),
])
def test_hyperparameters_that_are_no_number_are_refused_when_made(make, msg):
    # they used to reach the graph: a string momentum trained silently, a string beta raised
    # a raw ValueError at compile time
    with pytest.raises(TrainingError, match=msg):
        make()


def test_numpy_numbers_are_fine_hyperparameters():
    assert mb.train.Adam(beta1=np.float32(0.5), eps=np.float64(1e-7)).beta1 == 0.5
    assert mb.train.SGD(0.1, momentum=0.9, nesterov=True).nesterov
