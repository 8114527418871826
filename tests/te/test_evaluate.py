"""te.evaluate runs a tensor program with numpy, stage by stage: checked against numpy
computations of the same operators and against the loop-IR interpreter."""
import numpy as np
import pytest

from mlcbook import te, tir
from mlcbook.errors import TEError
from mlcbook.te import ops
from mlcbook.te.evaluate import evaluate

RNG = np.random.default_rng(0)


def _ph(shape, dtype="float32", name="x"):
    return te.placeholder(shape, dtype, name=name)


def test_an_elementwise_chain_with_broadcasting():
    x, b = _ph((3, 4)), _ph((4,), name="b")
    a, c = RNG.standard_normal((3, 4)).astype("float32"), RNG.standard_normal(4).astype("float32")
    got = evaluate(ops.relu(ops.add(x, b)), {x: a, b: c})
    np.testing.assert_array_equal(got, np.maximum(a + c, 0))


def test_reductions_with_a_start_and_a_condition():
    x = _ph((5, 6))
    a = RNG.standard_normal((5, 6)).astype("float32")
    k = te.reduce_axis((1, 5), name="k")
    y = te.compute((5,), lambda i: te.sum(x[i, k], axis=k, where=x[i, k] > 0.0), name="y")
    np.testing.assert_allclose(evaluate(y, {x: a}), np.where(a[:, 1:5] > 0, a[:, 1:5], 0).sum(1),
                               rtol=1e-6)
    np.testing.assert_array_equal(evaluate(ops.max(x, 0), {x: a}), a.max(0))


def test_a_select_whose_discarded_branch_reads_out_of_bounds():
    x = _ph((4,))
    y = ops.pad(x, [(2, 1)], 0.0, "constant")
    a = np.arange(1, 5, dtype="float32")
    np.testing.assert_array_equal(evaluate(y, {x: a}), np.pad(a, (2, 1)))


@pytest.mark.parametrize("build", [lambda x: ops.softmax(x, 1), lambda x: ops.transpose(x, (1, 0)),
                                   lambda x: ops.matmul(x, ops.transpose(x, (1, 0))),
                                   lambda x: ops.cumsum(x, 1)])
def test_it_agrees_with_the_loop_ir_interpreter(build):
    x = _ph((3, 5))
    a = RNG.standard_normal((3, 5)).astype("float32")
    y = build(x)
    out = np.zeros(y.shape, y.dtype)
    tir.interpret(te.create_prim_func([x, y]), a, out)
    np.testing.assert_allclose(evaluate(y, {x: a}), out, rtol=1e-5, atol=1e-6)


def test_several_outputs_and_a_missing_input():
    x, z = _ph((2, 3)), _ph((2, 3), name="z")
    a = np.ones((2, 3), "float32")
    first, second = evaluate([ops.exp(x), ops.neg(x)], {x: a})
    np.testing.assert_allclose(first, np.e * a, rtol=1e-6)
    np.testing.assert_array_equal(second, -a)
    with pytest.raises(TEError, match="the placeholder 'z' that 'add' reads has no value"):
        evaluate(ops.add(x, z), {x: a})
    with pytest.raises(TEError, match=r"the input 'x' has shape \(2, 3\), got an array of shape"):
        evaluate(ops.exp(x), {x: np.ones(3, "float32")})


def test_a_big_reduction_runs_in_blocks_of_rows_with_the_same_result(monkeypatch):
    import mlcbook.te.evaluate as ev
    x, w = _ph((7, 16)), _ph((16, 5), name="w")
    a = RNG.standard_normal((7, 16)).astype("float32")
    b = RNG.standard_normal((16, 5)).astype("float32")
    y, total = ops.matmul(x, w), ops.sum(x)
    whole = evaluate([y, total], {x: a, w: b})
    monkeypatch.setattr(ev, "CHUNK_VALUES", 3 * 5 * 16)   # three rows at a time
    blocks = evaluate([y, total], {x: a, w: b})
    np.testing.assert_array_equal(blocks[0], whole[0])
    np.testing.assert_allclose(blocks[0], a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    assert blocks[1].shape == () and np.isclose(blocks[1], a.astype(np.float64).sum(), atol=1e-4)


def test_a_convolution_in_blocks_of_single_pixels_agrees_with_the_interpreter(monkeypatch):
    import mlcbook.te.evaluate as ev
    x, w = _ph((1, 3, 6, 5)), _ph((4, 3, 3, 3), name="w")
    y = ops.conv(x, w, pads=(1, 1, 1, 1))
    a = RNG.standard_normal((1, 3, 6, 5)).astype("float32")
    b = RNG.standard_normal((4, 3, 3, 3)).astype("float32")
    want = np.zeros(y.shape, "float32")
    tir.interpret(te.create_prim_func([x, w, y]), a, b, want)
    monkeypatch.setattr(ev, "CHUNK_VALUES", 64)   # 27 steps a pixel: two pixels at a time
    np.testing.assert_allclose(evaluate(y, {x: a, w: b}), want, rtol=1e-5, atol=1e-5)
