"""build_step: the checks a training step's graph gets before it is compiled, and the form
it is compiled in (feature-major wide layers, bias gradients summed over the batch first)."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError
from mlcbook.graph import Var, op
from mlcbook.train.step_graph import MIN_BATCH

from ._reference import cnn_grads, mlp_grads, sgd


def test_an_update_that_is_not_elementwise_is_refused():
    class Transposing(mb.train.SGD):
        def update(self, p, g, state, lr):
            return op.transpose(op.transpose(op.sub(p, op.mul(lr, g)))), {}
    with pytest.raises(TrainingError, match="elementwise"):
        mb.train.build_step(mb.train.mlp((4, 3), batch=2), "cross_entropy",
                            Transposing(lr=0.1))


#: fc1 (128 x 32) and fc2 (96 x 128) are wider than their activations at batch 8 (the
#: weight bigger than the activations in and out); fc3 (4 x 96) is not
WIDE = ((32, 128, 96, 4), 8)


def _transposed_weights(ts) -> set[str]:
    return {c.args[0].name for c in ts.function.calls()
            if c.op == "transpose" and isinstance(c.args[0], Var) and c.args[0].name in ts.params}


def test_a_wide_layer_trains_without_a_transpose_of_its_weight():
    sizes, batch = WIDE
    ts = mb.train.build_step(mb.train.mlp(sizes, batch=batch), "cross_entropy",
                             mb.train.SGD(lr=0.1))
    assert _transposed_weights(ts) == {"fc3.weight"}


def test_two_wide_layers_pass_the_activation_between_them_untransposed():
    sizes, batch = WIDE
    ts = mb.train.build_step(mb.train.mlp(sizes, batch=batch), "cross_entropy",
                             mb.train.SGD(lr=0.1))
    fc2 = next(c for c in ts.function.calls() if c.op == "gemm"
               and getattr(c.args[0], "name", "") == "fc2.weight" and not c.attrs["trans_a"])
    relu = fc2.args[1]      # relu1 computed on fc1's (128, batch) product, as it comes
    assert relu.op == "relu" and relu.args[0].op == "gemm" and relu.shape == (128, batch)


def test_a_batch_too_small_for_a_vector_keeps_the_weight_transposed():
    sizes, _ = WIDE
    ts = mb.train.build_step(mb.train.mlp(sizes, batch=MIN_BATCH - 1), "cross_entropy",
                             mb.train.SGD(lr=0.1))
    assert _transposed_weights(ts) == {"fc1.weight", "fc2.weight", "fc3.weight"}


def test_wide_layers_train_as_the_float64_reference_does():
    sizes, batch = WIDE
    trainer = mb.train.compile_step(mb.train.mlp(sizes, batch=batch, seed=2),
                                    "cross_entropy", mb.train.SGD(lr=0.1, momentum=0.9))
    params = {k: v.astype(np.float64) for k, v in trainer.params.items()}
    state = {k: {} for k in params}
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, sizes[-1], batch)
        want_loss, grads = mlp_grads(params, x, y, len(sizes) - 1)
        assert trainer.step(x, y) == pytest.approx(want_loss, rel=1e-5)
        params = {k: sgd(params[k], grads[k], state[k], 0.1, momentum=0.9) for k in params}
    for k, want in params.items():
        np.testing.assert_allclose(trainer.params[k], want, rtol=1e-4, atol=1e-5)


def _cnn():
    return mb.train.cnn(batch=3, channels=(3, 4), image=4, classes=4, seed=2)


def test_a_conv_bias_gradient_is_summed_over_the_batch_first():
    ts = mb.train.build_step(_cnn(), "cross_entropy", mb.train.SGD(lr=0.1))
    sums = [tuple(c.attrs["axes"]) for c in ts.function.calls()
            if c.op == "sum" and c.attrs.get("axes")]
    assert (0, 2, 3) not in sums     # one scalar chain per channel, across every image
    assert sums.count((0,)) >= 2     # each conv's: over the images, then a short row sum


def test_a_cnn_trains_as_the_float64_reference_does():
    trainer = mb.train.compile_step(_cnn(), "cross_entropy", mb.train.SGD(lr=0.1, momentum=0.9))
    params = {k: v.astype(np.float64) for k, v in trainer.params.items()}
    state = {k: {} for k in params}
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((3, 1, 4, 4)).astype(np.float32)
        y = rng.integers(0, 4, 3)
        want_loss, grads = cnn_grads(params, x, y, 2)
        assert trainer.step(x, y) == pytest.approx(want_loss, rel=1e-5)
        params = {k: sgd(params[k], grads[k], state[k], 0.1, momentum=0.9) for k in params}
    for k, want in params.items():
        np.testing.assert_allclose(trainer.params[k], want, rtol=1e-4, atol=1e-5, err_msg=k)
