"""Exported object files load back, through llvmlite or as a shared library."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, BuildError, KernelLoadError
from mlcbook.runtime import load_kernel

from ._programs import ADD

RNG = np.random.default_rng(5)

PARALLEL_EXP = '''
@T.prim_func
def pexp(A: T.Buffer((64, 16), "float32"), B: T.Buffer((64, 16), "float32")):
    for i in T.parallel(64):
        for j in T.vectorized(16):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T.exp(A[vi, vj]) + T.tanh(A[vi, vj])
'''


def check_add(k):
    a = RNG.standard_normal((4, 8)).astype("float32")
    b = RNG.standard_normal(8).astype("float32")
    np.testing.assert_array_equal(k(a, b), a + b)


def test_object_round_trip(tmp_path):
    path = mb.build(mb.script.parse(ADD)).export_object(tmp_path / "add.o")
    with open(path, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    k = load_kernel(path)
    check_add(k)
    with pytest.raises(ArgumentError, match="'B'"):   # the loaded kernel still checks arguments
        k(np.zeros((4, 8), "float32"), np.zeros(3, "float32"))


def test_loaded_object_with_parallel_loop_and_libm_calls(tmp_path):
    path = mb.build(mb.script.parse(PARALLEL_EXP)).export_object(tmp_path / "pexp.o")
    a = RNG.standard_normal((64, 16)).astype("float32")
    np.testing.assert_allclose(load_kernel(path)(a), np.exp(a) + np.tanh(a), rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C toolchain to link")
def test_object_linked_into_a_shared_library(tmp_path):
    obj = mb.build(mb.script.parse(PARALLEL_EXP)).export_object(tmp_path / "pexp.o")
    so = tmp_path / "pexp.so"
    subprocess.run(["cc", "-shared", "-o", str(so), obj, "-lm"], check=True)
    k = load_kernel(so)
    a = RNG.standard_normal((64, 16)).astype("float32")
    np.testing.assert_allclose(k(a), np.exp(a) + np.tanh(a), rtol=1e-6, atol=1e-6)


def test_loaded_kernel_has_no_ir(tmp_path):
    k = load_kernel(mb.build(mb.script.parse(ADD)).export_object(tmp_path / "add.o"))
    with pytest.raises(BuildError, match="loaded from a binary"):
        k.llvm_ir()


def test_loading_something_else_is_an_error(tmp_path):
    with pytest.raises(KernelLoadError, match="no such file"):
        load_kernel(tmp_path / "missing.o")
    # an object file mlcbook did not write has no description of its entry points
    import llvmlite.binding as llvm
    tm = llvm.Target.from_default_triple().create_target_machine()
    other = tmp_path / "other.o"
    other.write_bytes(tm.emit_object(llvm.parse_assembly("define void @f() { ret void }")))
    with pytest.raises(KernelLoadError, match="not written by mlcbook"):
        load_kernel(other)


def test_cross_compiled_object_can_be_exported(tmp_path):
    k = mb.build(mb.script.parse(ADD), target="llvm -mtriple=aarch64-linux-gnu")
    path = k.export_object(tmp_path / "add_arm.o")
    data = open(path, "rb").read()
    assert data[:4] == b"\x7fELF" and data[18] == 183  # e_machine = EM_AARCH64


def test_a_malformed_object_is_refused_before_llvm_loads_it(tmp_path):
    from mlcbook.errors import ArtifactError
    good = open(mb.build(mb.script.parse(ADD)).export_object(tmp_path / "add.o"), "rb").read()
    for name, data in [("junk.o", b"\x7fELF" + bytes(200)), ("short.o", good[:len(good) // 2])]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ArtifactError, match="is not a usable object file"):
            load_kernel(tmp_path / name)
