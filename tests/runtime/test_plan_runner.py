"""The plan runner: a plan's kernel calls made by one native function, in order, stopping at
a kernel that reports a failure."""

import ctypes

import numpy as np

import mlcbook as mb
from mlcbook.codegen.jit import compile_ir
from mlcbook.runtime.plan_runner import plan_runner, runner_ir
from mlcbook.runtime.thread_pool import launcher_address

from ..codegen._util import map_func


def _kernel(fn):
    return mb.build(map_func(fn, ["float32"], "float32", lanes=16))


def _args(*addresses) -> ctypes.Array:
    return (ctypes.c_void_p * len(addresses))(*addresses)


def test_the_runner_calls_each_kernel_in_order_with_its_arguments():
    add, double = _kernel(lambda x: x + 1.0), _kernel(lambda x: x * 2.0)
    a = np.arange(64, dtype="float32")
    b, c = np.zeros_like(a), np.zeros_like(a)
    run = plan_runner([(add.native_address(), 3, False), (double.native_address(), 3, False)])
    launcher = launcher_address()
    assert run(_args(a.ctypes.data, b.ctypes.data, launcher,
                     b.ctypes.data, c.ctypes.data, launcher)) == 0
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_the_runner_stops_at_the_first_call_that_reports_a_failure():
    fails = compile_ir("define i32 @fails(ptr %a, ptr %l) {\n  ret i32 1\n}\n", [], mb.Target())
    double = _kernel(lambda x: x * 2.0)
    a, c = np.ones(64, "float32"), np.zeros(64, "float32")
    run = plan_runner([(fails.address("fails"), 2, True), (double.native_address(), 3, False)])
    launcher = launcher_address()
    assert run(_args(a.ctypes.data, launcher, a.ctypes.data, c.ctypes.data, launcher)) == 1
    assert not c.any()     # the call after the failed one did not run


def test_the_runner_reads_only_a_status_it_is_told_of():
    text = runner_ir([(4096, 2, False), (8192, 1, True)])
    assert "call void (ptr, ptr) inttoptr (i64 4096 to ptr)" in text
    assert "%r1 = call i32 (ptr) inttoptr (i64 8192 to ptr)" in text and "ret i32 2" in text
