"""The int8 matmul and its default schedule, tensorized with the best dot intrinsic."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.graph.int8_matmul import dot_lanes, int8_matmul, pack_weights, schedule_int8_matmul


def data(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return a, b, a.astype(np.int32) @ b.astype(np.int32).T


def test_default_schedule_tensorizes_and_matches_numpy():
    lanes = dot_lanes()
    func = schedule_int8_matmul(int8_matmul(32, 64, 128, lanes))
    assert "tensor_intrin" in func.script()
    a, b, want = data(32, 64, 128)
    c = np.zeros_like(want)
    mb.build(func)(a, pack_weights(b, lanes), c)
    np.testing.assert_array_equal(c, want)


def test_interpreter_runs_the_tensorized_matmul():
    func = schedule_int8_matmul(int8_matmul(4, 16, 8, dot_lanes()))
    a, b, want = data(4, 16, 8)
    c = np.zeros_like(want)
    mb.tir.interpret(func, a, pack_weights(b, dot_lanes()), c)
    np.testing.assert_array_equal(c, want)


def test_vnni_target_uses_vpdpbusd():
    target = mb.Target("llvm -mcpu=znver4")
    assert dot_lanes(target) == 16
    func = schedule_int8_matmul(int8_matmul(8, 32, 16, 16), target)
    assert "vpdpbusd" in mb.build(func, target=target).asm()


def test_pack_weights_layout():
    b = np.arange(8 * 8, dtype=np.int8).reshape(8, 8)
    bp = pack_weights(b, 4)
    assert bp.shape == (2, 2, 4, 4) and bp[1, 0, 2, 3] == b[6, 3]


def test_bad_shape_is_an_error():
    with pytest.raises(ScheduleError, match="multiple of lanes=8"):
        int8_matmul(4, 12, 8, 8)


def test_weights_packed_for_other_lanes_is_an_error():
    with pytest.raises(ScheduleError, match="packed for 4 lanes"):
        schedule_int8_matmul(int8_matmul(4, 16, 8, 4))
