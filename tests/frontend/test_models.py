"""Whole models built with onnx.helper, imported, interpreted and compiled, checked against
onnxruntime (rtol 1e-4, atol 1e-5)."""
import numpy as np
import onnxruntime as ort
import pytest

import mlcbook as mb
from mlcbook.frontend import examples

MODELS = {
    "mlp": (lambda: examples.mlp(batch=4), (4, 784)),
    "cnn": (lambda: examples.cnn(batch=2, batchnorm=True), (2, 1, 28, 28)),
    "residual": (lambda: examples.residual_block(batch=2), (2, 16, 16, 16)),
    "attention": (lambda: examples.attention_block(batch=2), (2, 16, 32)),
    "broadcast": (lambda: examples.broadcast_model(batch=3), (3, 3, 1, 5)),
}


def reference(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"input": x})[0]


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request):
    make, shape = MODELS[request.param]
    model = make()
    x = np.random.default_rng(7).standard_normal(shape).astype("float32")
    return model, x, reference(model, x)


def test_reference_evaluator_matches_onnxruntime(case):
    model, x, want = case
    got = mb.graph.interpret(mb.from_onnx(model), x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_compiled_model_matches_onnxruntime(case, tmp_path):
    model, x, want = case
    exe = mb.compile(mb.from_onnx(model))
    np.testing.assert_allclose(exe(x), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(mb.load(exe.save(tmp_path / "m.mlcb"))(x), want,
                               rtol=1e-4, atol=1e-5)
