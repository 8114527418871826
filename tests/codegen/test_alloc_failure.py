"""A kernel whose heap allocation fails (aligned_alloc returns NULL) frees what it took, runs
nothing and reports it: the call raises ExecutionError naming the kernel; no NULL is ever
written through (mlcbook.codegen.llvm_func)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import mlcbook as mb
from mlcbook.tir import Allocate, Buffer, BufferStore, For, PrimFunc, Var, seq

# builds three kernels, then lowers the address-space limit below what their buffers need,
# calls each, raises the limit again and calls each once more
SCRIPT = r"""
import json, resource, sys
import numpy as np
import mlcbook as mb
from mlcbook.tir import Allocate, Buffer, BufferStore, For, PrimFunc, Var, seq
N = 1 << 27   # 512 MiB of float32 per buffer; the limit leaves 256 MiB
mb.runtime.set_num_threads(int(sys.argv[1]))

def one_buffer(n):
    A, B, T = Buffer("A", (4,)), Buffer("B", (4,)), Buffer("T", (n,))
    i, j = Var("i"), Var("j")
    return PrimFunc("one_buffer", (A, B), Allocate(T, seq(
        For(i, n, BufferStore(T, A[i % 4] + 1.0, (i,))),
        For(j, 4, BufferStore(B, T[j] * 2.0, (j,))))))

def two_buffers(n):   # the first fits, the second does not: the first must be freed
    A, B, S, T = Buffer("A", (4,)), Buffer("B", (4,)), Buffer("S", (1 << 20,)), Buffer("T", (n,))
    h, i, j = Var("h"), Var("i"), Var("j")
    return PrimFunc("two_buffers", (A, B), Allocate(S, Allocate(T, seq(
        For(h, 1 << 20, BufferStore(S, A[h % 4], (h,))),
        For(i, n, BufferStore(T, S[i % (1 << 20)] + 1.0, (i,))),
        For(j, 4, BufferStore(B, T[j] * 2.0, (j,)))))))

def in_parallel(n):   # a buffer per parallel chunk: the chunk reports through its kernel
    A = mb.te.placeholder((4, 4), "float32", name="A")
    T = mb.te.compute((4, n), lambda m, i: A[m, i % 4] + 1.0, name="T")
    k = mb.te.reduce_axis(2, name="k")   # reads T[m, 0] and T[m, n - 1]: all of T is kept
    B = mb.te.compute((4,), lambda m: mb.te.sum(T[m, k * (n - 1)] * 2.0, axis=k), name="B")
    sch = mb.Schedule(mb.te.create_prim_func([A, B]))
    m, _ = sch.get_loops(sch.get_block("B"))
    sch.parallel(m)
    sch.compute_at(sch.get_block("T"), m)
    return sch.mod

kernels = {"one_buffer": (mb.build(one_buffer(N)), (4,)),
           "two_buffers": (mb.build(two_buffers(N)), (4,)),
           "in_parallel": (mb.build(in_parallel(N)), (4, 4))}
vm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (vm + (256 << 20), resource.RLIM_INFINITY))
out = {}
for name, (k, shape) in kernels.items():
    a = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    try:
        k(a)
        out[name] = {"error": None}
    except mb.MLCError as e:
        out[name] = {"error": type(e).__name__, "message": str(e), "may_fail": k.entry.may_fail}
resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
for name, (k, shape) in kernels.items():
    a = np.arange(np.prod(shape), dtype="float32").reshape(shape)
    want = (a + 1) * 2 if len(shape) == 1 else (a[:, 0] + 1) * 2 + (a[:, (N - 1) % 4] + 1) * 2
    out[name]["after"] = bool(np.allclose(k(a), want))
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc: Linux")
@pytest.mark.parametrize("threads", [1, 2])
def test_a_failed_allocation_is_an_execution_error_and_the_kernel_still_works(threads):
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(threads)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    for name, r in results.items():
        assert r["error"] == "ExecutionError" and r["may_fail"], (name, r)
        assert f"kernel 'main' could not allocate" in r["message"] or \
            f"kernel {name!r} could not allocate" in r["message"], r
        assert "Instead:" in r["message"]
        assert r["after"], name   # the limit lifted, the same kernel computes the right values


def test_a_kernel_without_heap_allocations_returns_nothing():
    A, B, T = Buffer("A", (100,)), Buffer("B", (100,)), Buffer("T", (100,))
    i, j = Var("i"), Var("j")
    k = mb.build(PrimFunc("small", (A, B), Allocate(T, seq(
        For(i, 100, BufferStore(T, A[i] + 1.0, (i,))),
        For(j, 100, BufferStore(B, T[j] * 2.0, (j,)))))))
    assert not k.entry.may_fail and re.search(r'define void @"mlcb_small"', k.llvm_ir())


def test_a_kernel_with_a_heap_allocation_checks_it_for_null():
    A, B, T = Buffer("A", (4,)), Buffer("B", (4,)), Buffer("T", (100_000,))
    i, j = Var("i"), Var("j")
    k = mb.build(PrimFunc("large", (A, B), Allocate(T, seq(
        For(i, 100_000, BufferStore(T, A[i % 4] + 1.0, (i,))),
        For(j, 4, BufferStore(B, T[j] * 2.0, (j,)))))))
    ir = k.llvm_ir()
    assert k.entry.may_fail and 'define i32 @"mlcb_large"' in ir
    assert re.search(r"icmp eq ptr %\"T\", null", ir) and "alloc.failed" in ir
