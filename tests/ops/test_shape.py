"""shape, size, constant_of_shape and range, declared from their te computes, against numpy
written from ONNX's definitions, interpreted and compiled without folding (their kernels)."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Function, TensorType, Var, interpret, op


def _both(f, *args):
    """f's value interpreted and compiled with no constant folding (so its kernel runs)."""
    return interpret(f, *args), mb.compile(f, opt_level=0)(*args)


@pytest.mark.parametrize("start,end", [(0, None), (1, None), (-2, -1), (-9, 9)])
def test_shape_gives_the_dimensions_from_start_to_end(start, end):
    x = Var("x", TensorType((2, 3, 4)))
    f = Function([x], op.add(op.shape(x, start=start, end=end), op.size(x)))
    want = np.array((2, 3, 4)[slice(start, end)], np.int64) + 24
    for got in _both(f, np.zeros((2, 3, 4), "float32")):
        np.testing.assert_array_equal(got, want)


def test_shape_and_size_of_a_tensor_with_no_elements():
    x = Var("x", TensorType((2, 0, 3)))
    zeros = np.zeros((2, 0, 3), "float32")
    assert interpret(Function([x], op.shape(x)), zeros).tolist() == [2, 0, 3]
    assert interpret(Function([x], op.size(x)), zeros) == 0
    assert interpret(Function([x], op.shape(x, start=2, end=1)), zeros).shape == (0,)


@pytest.mark.parametrize("value,dtype", [(2.5, "float32"), (True, "bool"), (-3, "int8"),
                                         (1.5, "float8_e4m3fn")])
def test_constant_of_shape_fills_its_dtype(value, dtype):
    f = Function([], op.constant_of_shape(shape=(2, 3), value=value, dtype=dtype))
    for got in _both(f):
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.astype("float32"),
                                      np.full((2, 3), value, dtype).astype("float32"))


@pytest.mark.parametrize("start,limit,delta,dtype", [(1, 10, 3, "int64"), (10, 4, -3, "int32"),
                                                     (0.1, 1.0, 0.3, "float32"),
                                                     (5, 1, 1, "int64")])
def test_range_is_start_plus_i_times_delta_in_its_dtype(start, limit, delta, dtype):
    n = max(int(np.ceil((limit - start) / delta)), 0)
    want = np.asarray(start, dtype) + np.arange(n).astype(dtype) * np.asarray(delta, dtype)
    f = Function([], op.range(start=start, limit=limit, delta=delta, dtype=dtype))
    runs = _both(f) if n else (interpret(f),)
    for got in runs:
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got, want)


def test_shape_and_size_export_and_import_under_their_onnx_names():
    ort = pytest.importorskip("onnxruntime")
    x = Var("x", TensorType((2, 3, 4)))
    f = Function([x], mb.graph.Tuple([op.shape(x, start=1), op.size(x)]))
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node] == ["Shape", "Size"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {"x": np.zeros((2, 3, 4), "float32")})
    assert got[0].tolist() == [3, 4] and got[1] == 24
    back = mb.from_onnx(model)       # folded to constants as the importer binds them
    assert [v.tolist() for v in mb.compile(back)(np.zeros((2, 3, 4), "float32"))] == [[3, 4], 24]
