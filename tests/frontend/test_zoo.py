"""The 9 model-zoo architectures onnx ships (opset 9, weights from ConstantOfShape, Dropout,
Sum, LRN) import with ``mb.from_onnx(path)``, compile, and match onnxruntime.

Compiling a 224x224 network takes from half a minute to minutes on 2 busy cores, so the
suite compiles the light ones by default and all 9 with ``MLCBOOK_ZOO=all``::

    MLCBOOK_ZOO=all pytest tests/frontend/test_zoo.py
"""

import os

import numpy as np
import onnxruntime as ort
import pytest

import mlcbook as mb

from mlcbook.frontend.zoo import ZOO, data_input, with_random_weights, zoo_path

#: compiled by default: the smallest compile times of the nine
DEFAULT = ("squeezenet", "shufflenet")
RUN_ALL = os.environ.get("MLCBOOK_ZOO") == "all"


def onnxruntime_outputs(model, feed):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # the zoo files carry unused initializers; ort warns about each
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


@pytest.mark.parametrize("name", ZOO)
def test_shipped_file_imports_without_conversion(name):
    mod = mb.from_onnx(zoo_path(name))
    out = mod["main"].ret_type
    assert out.shape[:2] == (1, 1000) and out.dtype == "float32"
    # ConstantOfShape weights were folded at import: no call of it is left in the graph
    assert not [c for c in mod["main"].calls() if c.op == "constant_of_shape"]


@pytest.mark.parametrize("name", ZOO)
def test_compiled_matches_onnxruntime(name):
    if name not in DEFAULT and not RUN_ALL:
        pytest.skip("a heavy compile; run with MLCBOOK_ZOO=all")
    model = with_random_weights(zoo_path(name))
    vi = data_input(model)
    shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    exe = mb.compile(mb.from_onnx(model))
    got = exe.run({vi.name: x})
    got = got if isinstance(got, tuple) else (got,)
    want = onnxruntime_outputs(model, {vi.name: x})
    # the last output is the class scores (before the Softmax, if there is one)
    assert want[-1].std() > 1e-2, "random weights should make the class scores differ"
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.reshape(g.shape), rtol=1e-3, atol=1e-4)
