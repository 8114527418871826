"""Calling a kernel: argument checks that name the parameter, outputs, inspection."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError

from ._programs import ADD

RNG = np.random.default_rng(4)


@pytest.fixture(scope="module")
def kernel():
    return mb.build(mb.script.parse(ADD))


def arrays():
    a = RNG.standard_normal((4, 8)).astype("float32")
    b = RNG.standard_normal(8).astype("float32")
    return a, b, np.zeros((4, 8), "float32")


def test_writes_outputs_in_place(kernel):
    a, b, c = arrays()
    assert kernel(a, b, c) is None
    np.testing.assert_array_equal(c, a + b)


def test_inputs_only_returns_new_outputs(kernel):
    a, b, _ = arrays()
    np.testing.assert_array_equal(kernel(a, b), a + b)


def test_wrong_count(kernel):
    a, b, c = arrays()
    with pytest.raises(ArgumentError, match=r"takes 3 arrays \(A, B, C\).*given 1"):
        kernel(a)


def test_not_an_array(kernel):
    a, b, c = arrays()
    with pytest.raises(ArgumentError, match=r"argument 1 \('B'\).*numpy array, got list"):
        kernel(a, list(b), c)


def test_wrong_dtype(kernel):
    a, b, c = arrays()
    with pytest.raises(ArgumentError, match=r"argument 0 \('A'\).*dtype float64 but A is float32"):
        kernel(a.astype("float64"), b, c)


def test_wrong_shape(kernel):
    a, b, c = arrays()
    with pytest.raises(ArgumentError, match=r"argument 2 \('C'\).*shape \(8, 4\).*\(4, 8\)"):
        kernel(a, b, c.reshape(8, 4))


def test_not_contiguous(kernel):
    a, b, c = arrays()
    with pytest.raises(ArgumentError, match=r"'A'.*not C-contiguous"):
        kernel(np.asfortranarray(a), b, c)
    with pytest.raises(ArgumentError, match=r"'B'.*not C-contiguous"):
        kernel(a, np.zeros(16, "float32")[::2], c)


def test_read_only_output(kernel):
    a, b, c = arrays()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"'C'.*output but the array is read-only"):
        kernel(a, b, c)


def test_output_overlapping_an_input(kernel):
    a, b, _ = arrays()
    with pytest.raises(ArgumentError, match=r"output 'C'.*overlaps argument 0 \('A'\)"):
        kernel(a, b, a)


def test_inputs_may_be_read_only(kernel):
    a, b, c = arrays()
    a.flags.writeable = False
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)


def test_inspection(kernel):
    assert "define void @\"mlcb_add\"" in kernel.llvm_ir()
    assert "define void @mlcb_add" in kernel.llvm_ir(optimized=True)
    assert "mlcb_add:" in kernel.asm()
    assert "float32[4, 8]" in repr(kernel)
    assert kernel.lowered.params[0].shape == (32,)


def test_library_of_several_kernels():
    add = mb.script.parse(ADD)
    mod = mb.tir.IRModule({"main": add, "other": add})
    lib = mb.build(mod)
    assert sorted(lib) == ["main", "other"]
    a, b, _ = arrays()
    np.testing.assert_array_equal(lib(a, b), a + b)
    np.testing.assert_array_equal(lib["other"](a, b), a + b)
    with pytest.raises(ArgumentError, match="no kernel named 'nope'.*main, other"):
        lib["nope"]
