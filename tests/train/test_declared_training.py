"""Training with declared roles: parameters train, buffers follow their rules (BatchNorm's
running statistics with ONNX's momentum, Dropout's counter), constants and frozen weights
stay bit-identical, and structural rewrites see the same declaration."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.errors import TrainingError
from mlcbook.grading.ch05 import bn_training_model
from mlcbook.train.rewrite import Runtime, parameters, widen

RNG = np.random.default_rng(4)


def _model(nodes, inits, n_in=4, batch=8, classes=3):
    graph = helper.make_graph(
        nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, n_in])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, classes])],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _w(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _half_model():
    """x -> Gemm fc1 -> Mul by the scalar initializer 'half' -> Relu -> Gemm fc2."""
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Mul", ["h", "half"], ["hh"], name="scale"),
             helper.make_node("Relu", ["hh"], ["r"], name="relu"),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2", transB=1)]
    return _model(nodes, {"w1": _w(6, 4), "b1": _w(6), "half": np.float32(0.5),
                          "w2": _w(3, 6), "b2": _w(3)})


def _trilu_model():
    """x -> Gemm fc1 -> MatMul by Trilu(constant mask) -> Gemm fc2."""
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Trilu", ["mask"], ["lower"], name="tril", upper=0),
             helper.make_node("MatMul", ["h", "lower"], ["hm"], name="causal"),
             helper.make_node("Gemm", ["hm", "w2", "b2"], ["y"], name="fc2", transB=1)]
    return _model(nodes, {"w1": _w(4, 4), "b1": _w(4), "mask": np.ones((4, 4), np.float32),
                          "w2": _w(3, 4), "b2": _w(3)})


def _batch(n_in=4, batch=8):
    return RNG.standard_normal((batch, n_in)).astype(np.float32), RNG.integers(0, 3, batch)


def test_a_scalar_constant_is_not_trained():
    trainer = mb.train.compile_step(mb.from_onnx(_half_model()), "cross_entropy",
                                    mb.train.SGD(lr=0.1))
    assert "half" not in trainer.params and trainer.declared["half"].kind == "constant"
    x, y = _batch()
    losses = [trainer.step(x, y) for _ in range(20)]
    assert losses[-1] < losses[0]
    assert trainer.model().weights["half"].data == np.float32(0.5)


def test_a_scalar_constant_does_not_block_a_rewrite():
    trainer = mb.train.compile_step(mb.from_onnx(_half_model()), "cross_entropy",
                                    mb.train.SGD(lr=0.1))
    model = trainer.model()
    r = widen(model, "fc1", 9, seed=1)
    x, _ = _batch()
    np.testing.assert_allclose(mb.graph.interpret(r.model, x), mb.graph.interpret(model, x),
                               rtol=1e-5, atol=1e-5)
    assert parameters(model)["half"].kind == "constant"


def test_trilu_on_a_constant_mask_trains():
    trainer = mb.train.compile_step(mb.from_onnx(_trilu_model()), "cross_entropy",
                                    mb.train.Adam(lr=0.05))
    assert trainer.declared["mask"].kind == "constant"
    x, y = _batch()
    losses = [trainer.step(x, y) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
    np.testing.assert_array_equal(trainer.model().weights["mask"].data, np.ones((4, 4)))


def test_a_frozen_layer_stays_bit_identical_and_owns_no_optimizer_state():
    model = mb.from_onnx(_half_model())
    before = {n: c.data.copy() for n, c in model["main"].weights.items()}
    trainer = mb.train.compile_step(model, "cross_entropy",
                                    mb.train.Adam(lr=0.05), freeze=["fc1"])
    x, y = _batch()
    for _ in range(5):
        trainer.step(x, y)
    after = trainer.model().weights
    for n in ("w1", "b1"):
        np.testing.assert_array_equal(after[n].data, before[n])
    assert not (after["w2"].data == before["w2"]).all()
    assert list(trainer.params) == ["w2", "b2"]
    assert all(link.owner in ("w2", "b2") for link in trainer.train_step.state.values())


def test_freezing_everything_says_there_is_nothing_to_train():
    with pytest.raises(TrainingError, match=r"no parameters to train \(its weights: 5 "
                                            r"constants, 0 buffers\)\. Instead: unfreeze"):
        mb.train.compile_step(mb.from_onnx(_half_model()), "cross_entropy",
                              mb.train.SGD(lr=0.1), freeze=["fc1", "fc2"])


def test_trainable_names_exactly_what_trains():
    trainer = mb.train.compile_step(mb.from_onnx(_half_model()), "cross_entropy",
                                    mb.train.SGD(lr=0.1), trainable=["w2"])
    assert list(trainer.params) == ["w2"]


# --- BatchNorm in training mode ---------------------------------------------------------------
def _bn_classifier(training_mode, channels=6):
    """x (8, 3, 6, 6) -> Conv -> BatchNormalization -> Relu -> GlobalAveragePool -> Flatten
    -> Gemm (3 classes)."""
    c = channels
    inits = {"conv.w": _w(c, 3, 3, 3), "conv.b": _w(c), "bn.scale": np.ones(c, np.float32),
             "bn.bias": np.zeros(c, np.float32), "bn.mean": _w(c),
             "bn.var": (RNG.random(c) + 0.5).astype(np.float32), "fc.w": _w(3, c),
             "fc.b": _w(3)}
    nodes = [helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["h"], name="conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["h", "bn.scale", "bn.bias", "bn.mean",
                                                     "bn.var"],
                              ["n", "bn.new_mean", "bn.new_var"][:3 if training_mode else 1],
                              name="bn",
                              momentum=0.8, training_mode=training_mode),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 3])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _images():
    return (RNG.standard_normal((8, 3, 6, 6)) * 2 + 1).astype(np.float32), \
        RNG.integers(0, 3, 8)


def test_running_statistics_follow_onnx_momentum_step_after_step():
    trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(0), training=True),
                                    "cross_entropy", mb.train.SGD(lr=0.5))
    assert set(trainer.buffers) == {"bn.mean", "bn.var"} and "bn.var" not in trainer.params
    for _ in range(3):
        x, y = _images()
        model = mb.to_onnx(trainer.model())     # the weights this step starts from
        bn = next(n for n in model.graph.node if n.op_type == "BatchNormalization")
        model.graph.output.extend([helper.make_tensor_value_info(o, TensorProto.FLOAT, [6])
                                   for o in bn.output[1:]])
        _, mean, var = ReferenceEvaluator(model).run(None, {"x": x})
        trainer.step(x, y)
        np.testing.assert_allclose(trainer.buffers["bn.mean"], mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(trainer.buffers["bn.var"], var, rtol=1e-5, atol=1e-6)


def test_thirty_sgd_steps_at_lr_half_keep_batch_norm_finite():
    # the failure: bn.var was NaN in 5 of 6 channels when it was a parameter
    for training in (False, True):
        trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(0), training=training),
                                        "cross_entropy", mb.train.SGD(lr=0.5))
        var0 = trainer.model().weights["bn.var"].data.copy()
        x, y = _images()
        for _ in range(30):
            trainer.step(x, y)
        var = trainer.model().weights["bn.var"].data
        assert np.isfinite(var).all() and (var > 0).all()
        if not training:     # inference BatchNorm: its statistics are constants
            np.testing.assert_array_equal(var, var0)


def test_predict_uses_the_running_statistics():
    trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(1), training=True),
                                    "cross_entropy", mb.train.SGD(lr=0.1))
    x, y = _images()
    trainer.step(x, y)
    inference = mb.from_onnx(mb.to_onnx(mb.graph.params.eval_form(trainer.model())))
    np.testing.assert_allclose(trainer.predict(x[:5]), mb.graph.interpret(inference, x)[:5],
                               rtol=1e-4, atol=1e-5)


def test_a_checkpoint_keeps_the_buffers_and_resumes_bit_identically(tmp_path):
    trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(1), training=True),
                                    "cross_entropy", mb.train.Adam(lr=0.01))
    x, y = _images()
    trainer.step(x, y)
    path = trainer.save(tmp_path / "bn.zip")
    loss = trainer.step(x, y)
    resumed = mb.train.load(path)
    assert resumed.declared.buffers == ("bn.mean", "bn.var")
    assert resumed.step(x, y) == loss
    for n in trainer.buffers:
        np.testing.assert_array_equal(resumed.buffers[n], trainer.buffers[n])


def test_a_rollback_restores_the_buffers_bit_for_bit():
    x, y = _images()
    data = mb.train.Batches(np.repeat(x, 4, axis=0), np.repeat(y, 4), 8, seed=0)
    trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(1), training=True),
                                    "cross_entropy", mb.train.SGD(lr=0.1), data=data)
    rt = Runtime(trainer)
    snap = rt.snapshot()
    rt.run(3)
    rt.restore(snap)
    np.testing.assert_array_equal(rt.trainer.buffers["bn.var"], snap.state["buffers"]["bn.var"])


def test_widening_the_conv_widens_the_running_statistics():
    trainer = mb.train.compile_step(mb.from_onnx(_bn_classifier(1), training=True),
                                    "cross_entropy", mb.train.SGD(lr=0.1))
    model = trainer.model()
    assert parameters(model)["bn.mean"].kind == "buffer"
    r = widen(model, "conv", 9, seed=2)
    assert r.model.weights["bn.var"].shape == (9,)
    x, _ = _images()
    np.testing.assert_allclose(mb.graph.interpret(r.model, x), mb.graph.interpret(model, x),
                               rtol=1e-4, atol=1e-5)
    wider = mb.train.compile_step(r.model, "cross_entropy", mb.train.SGD(lr=0.1))
    assert set(wider.buffers) == {"bn.mean", "bn.var"}


# --- Dropout ------------------------------------------------------------------------------------
def _dropout_mlp():
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu"),
             helper.make_node("Dropout", ["r", "ratio"], ["d"], name="drop", seed=3),
             helper.make_node("Gemm", ["d", "w2", "b2"], ["y"], name="fc2", transB=1)]
    return _model(nodes, {"w1": _w(16, 4), "b1": _w(16), "ratio": np.float32(0.5),
                          "w2": _w(3, 16), "b2": _w(3)})


def test_dropout_draws_a_new_seeded_mask_each_step():
    x, y = _batch()
    model, runs = _dropout_mlp(), []
    for _ in range(2):
        trainer = mb.train.compile_step(mb.from_onnx(model, training=True),
                                        "cross_entropy", mb.train.SGD(lr=0.0))
        runs.append([trainer.step(x, y) for _ in range(4)])
        assert trainer.buffers["drop.counter"] == 4
    assert runs[0] == runs[1]                 # seeded: the same masks
    assert len(set(runs[0])) == 4             # lr 0: only the mask changes the loss


def test_the_trainer_says_how_many_buffers_it_updates():
    trainer = mb.train.compile_step(mb.from_onnx(bn_training_model(), batch_size=2,
                                                 training=True), "mse", mb.train.SGD(lr=0.1))
    assert repr(trainer) == ("<Trainer main: 4 parameters, 0 state tensors, 2 buffers, SGD, "
                             "step 0>")
    assert trainer.declared.buffers == ("bn.running_mean", "bn.running_var")


def _numpy_bn_sgd(w, x, t, steps, lr, mom, eps, bn_momentum):
    """SGD with momentum on mse(gemm(batch_norm_train(x)), t), in float64 numpy: the
    gradients written out by hand, the running statistics by ONNX's rule."""
    w = {k: v.astype(np.float64).copy() for k, v in w.items()}
    bufs = {k: np.zeros_like(w[k]) for k in ("s", "b", "W", "c")}
    for _ in range(steps):
        mu, var = x.mean(axis=0), x.var(axis=0)
        xh = (x - mu) / np.sqrt(var + eps)
        h = w["s"] * xh + w["b"]
        out = h @ w["W"].T + w["c"]
        g_out = 2 * (out - t) / out.size
        g_h = g_out @ w["W"]
        grads = {"W": g_out.T @ h, "c": g_out.sum(axis=0), "s": (g_h * xh).sum(axis=0),
                 "b": g_h.sum(axis=0)}
        for k, g in grads.items():
            bufs[k] = mom * bufs[k] + g
            w[k] -= lr * bufs[k]
        w["mean"] = bn_momentum * w["mean"] + (1 - bn_momentum) * mu
        w["var"] = bn_momentum * w["var"] + (1 - bn_momentum) * var
    return w


def test_a_float64_batch_norm_step_matches_numpy():
    from mlcbook.graph import Constant, Function, Var
    from mlcbook.graph.expr import Call
    from mlcbook.ops import Attrs, TensorType
    rng = np.random.default_rng(8)
    w = {"s": rng.standard_normal(4), "b": rng.standard_normal(4),
         "mean": rng.standard_normal(4), "var": rng.random(4) + 0.5,
         "W": rng.standard_normal((3, 4)), "c": rng.standard_normal(3)}
    x = rng.standard_normal((8, 4)) * 2 + 1
    t = rng.standard_normal((8, 3))
    xv = Var("x", TensorType((8, 4), "float64"))
    bn = Call("batch_norm_train", (xv, *(Constant(w[k], k) for k in ("s", "b", "mean", "var"))),
              Attrs(epsilon=1e-3, momentum=0.7), "bn")
    model = Function([xv], Call("gemm", (bn, Constant(w["W"], "W"), Constant(w["c"], "c")),
                                Attrs(trans_b=1), "fc"))
    trainer = mb.train.compile_step(model, "mse", mb.train.SGD(lr=0.1, momentum=0.9))
    for _ in range(5):
        trainer.step(x, t)
    want = _numpy_bn_sgd(w, x, t, 5, 0.1, 0.9, 1e-3, 0.7)
    got = {**trainer.params, **trainer.buffers}
    assert set(trainer.buffers) == {"mean", "var"}
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-10, atol=1e-12, err_msg=k)


def _digits_cnn():
    """x (N, 1, 8, 8) -> Conv -> BatchNormalization -> Relu -> MaxPool -> Dropout(0.2) ->
    Flatten -> Gemm (10 classes), He-initialized."""
    rng = np.random.default_rng(0)

    def he(*shape):
        return (rng.standard_normal(shape) * np.sqrt(2 / np.prod(shape[1:]))).astype(np.float32)
    inits = {"conv.w": he(8, 1, 3, 3), "conv.b": np.zeros(8, np.float32),
             "bn.s": np.ones(8, np.float32), "bn.b": np.zeros(8, np.float32),
             "bn.m": np.zeros(8, np.float32), "bn.v": np.ones(8, np.float32),
             "ratio": np.float32(0.2), "fc.w": he(10, 128), "fc.b": np.zeros(10, np.float32)}
    nodes = [helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["h"], name="conv",
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["h", "bn.s", "bn.b", "bn.m", "bn.v"],
                              ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Dropout", ["p", "ratio"], ["d"], name="drop", seed=1),
             helper.make_node("Flatten", ["d"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_an_imported_cnn_with_batch_norm_and_dropout_learns_digits():
    from sklearn.datasets import load_digits
    (x, y), (x_test, y_test) = mb.train.digits_split(load_digits())
    x, x_test = x.reshape(-1, 1, 8, 8), x_test.reshape(-1, 1, 8, 8)
    trainer = mb.train.compile_step(mb.from_onnx(_digits_cnn(), batch_size=32, training=True),
                                    optimizer=mb.train.SGD(lr=0.05, momentum=0.9),
                                    data=mb.train.Batches(x, y, 32, seed=0))
    assert trainer.declared.buffers == ("bn.m", "bn.v", "drop.counter")
    trainer.fit(300)
    assert trainer.accuracy(x_test, y_test) > 0.95
