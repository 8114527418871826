"""Default schedules keep the meaning of every kernel (checked by the interpreter)."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph.default_schedule import default_schedule, split_init
from mlcbook.ops import TensorType as T
from mlcbook.ops import legalize_call
from mlcbook.tir.analysis import collect_blocks


def run(func, args):
    outs = [np.zeros(p.shape, p.dtype) for p in func.outputs]
    mb.tir.interpret(func, *args, *outs)
    return outs[0]


def test_split_init_moves_the_init_into_its_own_block():
    f = legalize_call("matmul", [T((4, 8)), T((8, 16))])
    g = split_init(f, "matmul")
    names = [r.block.name for r in collect_blocks(g.body)]
    assert names == ["root", "matmul_init", "matmul"]
    assert collect_blocks(g.body)[2].block.init is None
    mb.tir.verify(g)
    a, b = np.ones((4, 8), "float32"), np.ones((8, 16), "float32")
    np.testing.assert_array_equal(run(g, [a, b]), a @ b)


@pytest.mark.parametrize("op,types,attrs", [
    ("matmul", [T((8, 24)), T((24, 40))], {}),
    ("conv", [T((1, 3, 10, 12)), T((4, 3, 3, 3)), T((4,))], {"pads": (1, 1, 1, 1)}),
    ("softmax", [T((3, 20))], {}),
    ("add", [T((5, 70)), T((70,))], {}),
    ("max_pool", [T((1, 2, 8, 8))], {"kernel_shape": (2, 2), "strides": (2, 2)}),
])
def test_scheduled_kernels_compute_the_same(op, types, attrs):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(t.shape).astype(t.dtype) for t in types]
    f = legalize_call(op, types, attrs)
    g = default_schedule(f)
    mb.tir.verify(g)
    np.testing.assert_allclose(run(g, args), run(f, args), rtol=1e-5, atol=1e-6)


def test_tiled_reduction_vectorizes_and_parallelizes():
    g = default_schedule(legalize_call("matmul", [T((64, 256)), T((256, 512))]))
    text = str(g)
    assert "T.parallel" in text and "T.vectorized(16)" in text and "T.unroll(4)" in text
