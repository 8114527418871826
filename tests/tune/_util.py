"""Small programs the tune tests share."""

from __future__ import annotations

import mlcbook as mb


def matmul(n: int = 32, m: int | None = None, k: int | None = None):
    m = m or n
    k = k or n
    return mb.script.parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {k}), "float32"), B: T.Buffer(({k}, {m}), "float32"), C: T.Buffer(({n}, {m}), "float32")):
    for i, j, r in T.grid({n}, {m}, {k}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''')


def add_one(n: int = 64):
    """Not a matmul at all: the "wrong candidate" of the measurement tests."""
    return mb.script.parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"), C: T.Buffer(({n}, {n}), "float32")):
    for i, j in T.grid({n}, {n}):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = A[vi, vj] + T.float32(1)
''')


def half_matmul(n: int = 32):
    """A matmul that computes only the first half of C's rows and leaves the rest as it
    found it: right only where C held the right values already."""
    return mb.script.parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"), C: T.Buffer(({n}, {n}), "float32")):
    for i, j, r in T.grid({n // 2}, {n}, {n}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, r])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''')
