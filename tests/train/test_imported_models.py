"""Issue 32's judgement on held-out models imported from ONNX (``_imported_models``): a CNN
with BatchNorm and Dropout, a GRU classifier, a ConvTranspose decoder and a ViT block with
a class token (MatMul/Softmax attention, or ONNX's fused Attention) train on scikit-learn's
digits, compiled in float32, to what a float64 run of the same steps reaches (the training
step's graph interpreted, independent of the compiled path; for the CNN also a numpy
reference with hand-written gradients); the trained models predict what onnxruntime
computes with their weights; every parameter's gradient matches finite differences in
float64; constants never train and a frozen layer stays bit-identical."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper as nh

import mlcbook as mb
from mlcbook.graph.expr import Function, Var
from mlcbook.graph.interpret import interpret
from mlcbook.graph.params import eval_form
from mlcbook.ops import get as get_op
from mlcbook.ops.types import TensorType
from mlcbook.train.losses import get_loss

from . import _imported_models as I
from . import _reference as R

sklearn = pytest.importorskip("sklearn.datasets")
ort = pytest.importorskip("onnxruntime")

# model: (builder, loss, steps, Adam's lr)
MODELS = {"cnn": (I.cnn, "cross_entropy", 80, 0.01),
          "gru": (I.gru, "cross_entropy", 60, 0.02),
          "decoder": (I.decoder, "mse", 100, 0.02),
          "vit": (I.vit, "cross_entropy", 60, 0.01),
          "vit_tile": (lambda: I.vit(class_token="tile"), "cross_entropy", 60, 0.01),
          "vit_fused": (lambda: I.vit(fused=True), "cross_entropy", 60, 0.01)}
NAMES = list(MODELS)
CLASSIFIERS = [n for n in NAMES if MODELS[n][1] == "cross_entropy"]


@pytest.fixture(scope="module")
def digits():
    return mb.train.digits_split(sklearn.load_digits(), image=True)


def _targets(loss, x, y):
    return x if loss == "mse" else y


_RUNS: dict = {}


def _run(name, digits):
    """The model trained compiled (float32) and by the float64 reference, same init, same
    batches, same steps: ``(onnx model, trainer, losses, reference params, reference
    buffers, reference losses)``."""
    if name not in _RUNS:
        make, loss, steps, lr = MODELS[name]
        (x, y), _ = digits
        model = make()
        mod = mb.from_onnx(model, batch_size=I.BATCH, training=True)
        batches = mb.train.Batches(x, _targets(loss, x, y), I.BATCH, seed=0)
        trainer = mb.train.compile_step(mod, loss, mb.train.Adam(lr=lr), data=batches)
        losses = trainer.fit(steps)
        ref = I.train_reference(mod["main"], loss, mb.train.Adam(lr=lr),
                                mb.train.Batches(x, _targets(loss, x, y), I.BATCH, seed=0),
                                steps)
        _RUNS[name] = (model, trainer, losses) + ref
    return _RUNS[name]


def _reference_predict(trainer, params, buffers, x):
    """The float64 reference's inference-form outputs on ``x`` (by the interpreter)."""
    forward = I.float64(eval_form(trainer.model_ir))
    values = {**params, **buffers}
    names = [n for n in forward.weights if n in values]
    lifted = mb.train.lift_weights(forward, names)
    outs = []
    for i in range(0, len(x) - len(x) % I.BATCH, I.BATCH):
        outs.append(interpret(lifted, x[i:i + I.BATCH].astype(np.float64),
                              *(values[n] for n in names)))
    return np.concatenate(outs)


@pytest.mark.parametrize("name", NAMES)
def test_the_compiled_float32_run_follows_the_float64_reference(name, digits):
    _, trainer, losses, _, _, ref_losses = _run(name, digits)
    np.testing.assert_allclose(losses[:10], ref_losses[:10], rtol=1e-4)
    assert np.mean(losses[-10:]) < 0.5 * np.mean(losses[:5])


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_a_classifier_reaches_the_reference_accuracy(name, digits):
    _, trainer, _, params, buffers, _ = _run(name, digits)
    _, (x_test, y_test) = digits
    n = len(x_test) - len(x_test) % I.BATCH
    ref = float((_reference_predict(trainer, params, buffers, x_test).argmax(1)
                 == y_test[:n]).mean())
    got = trainer.accuracy(x_test[:n], y_test[:n])
    assert ref > 0.7, f"the reference reached only {ref:.3f}: the task is not learned"
    assert got >= ref - 0.02, f"compiled {got:.3f}, float64 reference {ref:.3f}"


def _numpy_cnn(digits, steps, lr):
    """The held-out CNN trained by the hand-written numpy float64 reference
    (``_reference.bn_cnn_grads`` and ``adam``): same init, batches, Adam, and dropout masks
    (the op's own mask for each step's counter): ``(params, running stats, losses)``."""
    (x, y), _ = digits
    init = {t.name: nh.to_array(t).astype(np.float64) for t in I.cnn().graph.initializer}
    params = {k: init[k] for k in ("conv.w", "bn.scale", "bn.bias", "fc.w", "fc.b")}
    running = {k: init[k] for k in ("bn.mean", "bn.var")}
    state: dict = {k: {} for k in params}
    batches, losses = mb.train.Batches(x, y, I.BATCH, seed=0), []
    for k in range(steps):
        xb, yb = batches.next()
        keep = get_op("dropout").reference(np.ones((I.BATCH, 128)), np.int64(k), ratio=0.2,
                                           seed=7)
        loss, grads, stats = R.bn_cnn_grads(params, xb, yb, keep)
        params = {n: R.adam(v, grads[n], state[n], lr) for n, v in params.items()}
        running = {n: 0.9 * running[n] + 0.1 * s for n, s in zip(running, stats)}
        losses.append(loss)
    return params, running, losses


def test_the_cnn_trains_like_a_hand_written_numpy_reference(digits):
    _, trainer, losses, *_ = _run("cnn", digits)
    _, _, steps, lr = MODELS["cnn"]
    params, running, ref_losses = _numpy_cnn(digits, steps, lr)
    np.testing.assert_allclose(losses[:10], ref_losses[:10], rtol=1e-4)
    for n, v in running.items():
        np.testing.assert_allclose(trainer.buffers[n], v, rtol=1e-3, atol=1e-4, err_msg=n)
    _, (x_test, y_test) = digits
    n = len(x_test) - len(x_test) % I.BATCH
    ref = float((_reference_predict(trainer, params, running, x_test).argmax(1)
                 == y_test[:n]).mean())
    assert ref > 0.7 and trainer.accuracy(x_test[:n], y_test[:n]) >= ref - 0.02


def test_the_decoder_reaches_the_reference_reconstruction_error(digits):
    _, trainer, _, params, buffers, _ = _run("decoder", digits)
    _, (x_test, _) = digits
    n = len(x_test) - len(x_test) % I.BATCH
    ref = float(np.mean((_reference_predict(trainer, params, buffers, x_test)
                         - x_test[:n]) ** 2))
    got = float(np.mean((trainer.predict(x_test[:n]) - x_test[:n]) ** 2))
    baseline = float(np.mean((x_test - x_test.mean()) ** 2))     # predicting the mean pixel
    assert ref < 0.8 * baseline, f"reference mse {ref:.4f}, the mean pixel's {baseline:.4f}"
    assert got <= ref * 1.02, f"compiled mse {got:.4f}, float64 reference {ref:.4f}"


def _inference_model(model: onnx.ModelProto, values: dict) -> onnx.ModelProto:
    """``model`` with the trained ``values`` as its initializers and BatchNormalization and
    Dropout in inference mode (what onnxruntime should compute like ``trainer.predict``)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for t in out.graph.initializer:
        if t.name in values:
            t.CopyFrom(nh.from_array(np.asarray(values[t.name], np.float32), t.name))
        elif t.name == "drop.training":
            t.CopyFrom(nh.from_array(np.bool_(False), t.name))
    for node in out.graph.node:
        if node.op_type == "BatchNormalization":
            del node.output[1:]
            for a in node.attribute:
                if a.name == "training_mode":
                    a.i = 0
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_trained_model_predicts_what_onnxruntime_computes(name, digits):
    model, trainer, *_ = _run(name, digits)
    _, (x_test, _) = digits
    sess = ort.InferenceSession(
        _inference_model(model, {**trainer.params, **trainer.buffers}).SerializeToString(),
        providers=["CPUExecutionProvider"])
    want = sess.run(None, {"image": x_test[:64]})[0]
    np.testing.assert_allclose(trainer.predict(x_test[:64]), want, rtol=1e-4, atol=1e-4)


# --- gradients ----------------------------------------------------------------------------
def _loss_function(func: Function, loss: str) -> Function:
    out = func.ret_type
    labels = Var("labels", TensorType(out.shape[:1], "int64") if loss == "cross_entropy"
                 else out)
    return Function(func.params + (labels,), get_loss(loss)(func.body, labels), "loss",
                    func.attrs)


@pytest.mark.parametrize("name", NAMES)
def test_every_parameter_gradient_matches_finite_differences(name, digits):
    """In float64 at batch 4, each parameter's gradient ``g`` against central differences
    along three random directions ``d`` (``<g, d>``, which any wrong element changes) and at
    its largest element."""
    make, loss, _, _ = MODELS[name]
    (x, y), _ = digits
    mod = mb.from_onnx(make(), batch_size=4, training=True)
    func = _loss_function(I.float64(mod["main"]), loss)
    params = list(mb.graph.declarations(mod["main"]).parameters)
    lifted = mb.train.lift_weights(func, params)
    data = [x[:4].astype(np.float64), x[:4].astype(np.float64) if loss == "mse" else y[:4]]
    values = {n: np.array(func.weights[n].data) for n in params}
    grads = interpret(mb.train.grad(lifted, params), *data, *values.values())[1:]
    rng = np.random.default_rng(0)

    def loss_at(name_, value):
        return float(interpret(lifted, *data, *{**values, name_: value}.values()))

    eps = 1e-5
    for p, g in zip(params, grads):
        w = values[p]
        directions = [rng.standard_normal(w.shape) for _ in range(3)]
        one_hot = np.zeros(w.shape)
        one_hot.flat[np.argmax(np.abs(g))] = 1.0
        for d in directions + [one_hot]:
            numeric = (loss_at(p, w + eps * d) - loss_at(p, w - eps * d)) / (2 * eps)
            analytic = float(np.sum(g * d))
            assert abs(analytic - numeric) <= 1e-6 * max(1.0, abs(numeric)), \
                f"{p}: analytic {analytic!r}, finite differences {numeric!r}"
    assert len(grads) == len(params) and all(np.abs(g).max() > 0 for g in grads[-2:])


# --- what trains ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_constants_and_buffers_are_not_parameters(name, digits):
    model, trainer, *_ = _run(name, digits)
    declared = trainer.declared
    assert set(trainer.params) == set(declared.parameters)
    for n in declared.constants:
        np.testing.assert_array_equal(trainer.model().weights[n].data,
                                      mb.from_onnx(model, batch_size=I.BATCH)["main"]
                                      .weights[n].data)
    assert all(owner in declared.parameters
               for _, owner, _ in trainer.train_step.function.attrs["state_owners"])


def test_the_vits_scale_and_class_index_are_constants_and_the_class_token_trains(digits):
    model, trainer, *_ = _run("vit", digits)
    kinds = {n: d.kind for n, d in trainer.declared.items()}
    assert kinds["scale"] == kinds["cls_index"] == "constant" and kinds["cls"] == "parameter"
    start = nh.to_array(next(t for t in model.graph.initializer if t.name == "cls"))
    assert np.abs(trainer.params["cls"] - start).max() > 1e-3


def test_the_cnns_batch_norm_statistics_are_buffers_that_follow_the_batches(digits):
    _, trainer, _, _, ref_buffers, _ = _run("cnn", digits)
    kinds = {n: d.kind for n, d in trainer.declared.items()}
    assert kinds["bn.mean"] == kinds["bn.var"] == kinds["drop.counter"] == "buffer"
    assert trainer.buffers["drop.counter"] == MODELS["cnn"][2]
    for n in ("bn.mean", "bn.var"):
        np.testing.assert_allclose(trainer.buffers[n], ref_buffers[n], rtol=1e-3, atol=1e-4)


FROZEN = [("cnn", "conv"), ("cnn", "bn"), ("gru", "gru"), ("decoder", "up1"),
          ("decoder", "enc"), ("vit", "embed.mm"), ("vit", "cls_b"), ("vit", "ln1")]


@pytest.mark.parametrize("name,layer", FROZEN, ids=[f"{n}-{k}" for n, k in FROZEN])
def test_a_frozen_layer_is_bit_identical_after_training(name, layer, digits):
    make, loss, _, lr = MODELS[name]
    (x, y), _ = digits
    mod = mb.from_onnx(make(), batch_size=I.BATCH, training=True)
    before = {n: np.array(c.data) for n, c in mod["main"].weights.items()}
    trainer = mb.train.compile_step(mod, loss, mb.train.Adam(lr=lr), freeze=[layer],
                                    data=mb.train.Batches(x, _targets(loss, x, y), I.BATCH))
    frozen = set(trainer.declared.constants) - set(
        mb.graph.declarations(mod["main"]).constants)
    assert frozen and not frozen & set(trainer.params)
    trainer.fit(10)
    after = trainer.model().weights
    for n in frozen:
        assert after[n].data.tobytes() == before[n].tobytes(), f"frozen {n!r} changed"
    assert all((after[n].data != before[n]).any() for n in trainer.params)
