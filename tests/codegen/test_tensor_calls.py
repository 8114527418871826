"""Tensor calls in code generation: CPU features of targets, MissingFeatureError."""

import pytest

import mlcbook as mb
from mlcbook.codegen.tensor_calls import TENSOR_CALLS, lookup
from mlcbook.errors import BuildError
from mlcbook.graph.kernels.int8_matmul import int8_matmul_tiled
from mlcbook.tir.x86_intrinsics import u8i8_tile


def test_target_features_from_cpu_name():
    t = mb.Target("llvm -mcpu=znver4")
    assert t.has_feature("avx512vnni") and t.has_feature("avx512bf16")
    assert not mb.Target("llvm -mcpu=znver3").has_feature("avx512vnni")
    assert mb.Target("llvm -mcpu=znver3").has_feature("avx2")


def test_target_features_from_mattr():
    t = mb.Target("llvm -mcpu=x86-64 -mattr=+avx2,-avx512f")
    assert t.has_feature("avx2") and not t.has_feature("avx512f")


def test_host_features_come_from_llvm():
    host = mb.Target()
    assert host.has_feature("sse2")


def test_every_intrinsic_op_has_an_emitter():
    u8i8_tile("pmaddwd", 2, 3)     # a register-tiled kernel's emitter is made on first lookup
    u8i8_tile("vpdpbusd512", 5, 3, 2, (4, 2))
    u8i8_tile("vpdpbusd256", 5, 3, 2, (4, 1))
    # the library's own intrinsics: a test may have registered others (a grader registers a
    # student's dot intrinsic, without features)
    for name in (n for n in mb.tir.TensorIntrin.names() if n.startswith("x86.")):
        intrin = mb.tir.TensorIntrin.get(name)
        op = intrin.impl.body.value.op
        assert lookup(op).name == op and op in TENSOR_CALLS
        assert set(lookup(op).features) <= set(intrin.features) | {"avx512f"}, name


@pytest.mark.parametrize("variant, needs", [("vpdpbusd512", "avx512vnni"),
                                            ("vpdpbusd256", "avxvnni")])
def test_vnni_tiles_need_their_feature(variant, needs):
    """An int8 VNNI tile built for a CPU without the instruction: a MissingFeatureError
    naming the feature, not an illegal instruction at run time."""
    sch = mb.Schedule(int8_matmul_tiled(4, 32, 16))
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_matmul_int8_acc"))
    sch.reorder(i, jo, ji, ko, ki)
    sch.tensorize(i, u8i8_tile(variant, 4, 4, 2, (4, 2)).name)
    with pytest.raises(mb.MLCError, match=needs):
        mb.build(sch.func, target="llvm -mcpu=x86-64-v3")


def test_unknown_op_is_a_build_error():
    with pytest.raises(BuildError, match="no code generation for tensor call 'nope'"):
        lookup("nope")
