"""The model shipped inside the package: valid ONNX, the same bytes every time, and compiled
by mlcbook to what onnxruntime computes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

import mlcbook as mb
from mlcbook import models


def test_the_model_is_valid_and_deterministic():
    model = models.tiny_convnet()
    onnx.checker.check_model(model, full_check=True)
    assert model.SerializeToString() == models.tiny_convnet().SerializeToString()
    assert model.SerializeToString() != models.tiny_convnet(seed=1).SerializeToString()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == list(models.INPUT_SHAPE)


def test_compiled_model_matches_onnxruntime():
    model = models.tiny_convnet()
    x = models.sample_input(4, seed=3)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected, = session.run(None, {models.INPUT_NAME: x})
    exe = mb.compile(mb.from_onnx(model, batch_size=4))
    np.testing.assert_allclose(exe(x), expected, rtol=1e-4, atol=1e-5)
    # random weights, but not degenerate: the classes get clearly different probabilities
    assert expected.max(axis=1).min() > 0.2


def test_save_writes_a_loadable_file(tmp_path):
    path = models.save_tiny_convnet(tmp_path / "m.onnx")
    assert onnx.load(path).SerializeToString() == models.tiny_convnet().SerializeToString()


def test_sample_input_is_a_batch_of_grey_images():
    x = models.sample_input(2)
    assert x.shape == (2, 1, 28, 28) and x.dtype == np.float32
    assert 0 <= x.min() and x.max() < 1
