"""Graph functions to JSON + arrays and back."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError
from mlcbook.frontend import examples
from mlcbook.graph.serialize import function_from_json, function_to_json


def test_round_trip_keeps_structure_and_weights():
    func = mb.from_onnx(examples.attention_block(batch=2))["main"]
    doc, arrays = function_to_json(func)
    back = function_from_json(json.loads(json.dumps(doc)), arrays)
    mb.graph.assert_structural_equal(back, func)
    assert back.weights["ln.scale"].owner == func.weights["ln.scale"].owner
    x = np.random.default_rng(0).standard_normal((2, 16, 32)).astype(np.float32)
    np.testing.assert_array_equal(mb.graph.interpret(back, x), mb.graph.interpret(func, x))


def test_other_formats_are_refused():
    doc, arrays = function_to_json(mb.train.mlp((3, 2), batch=1))
    with pytest.raises(GraphError, match="format"):
        function_from_json(dict(doc, format=99), arrays)
