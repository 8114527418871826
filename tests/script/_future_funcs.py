"""Scripts in a module with postponed annotations: T.Buffer(...) stays source text."""

from __future__ import annotations

from mlcbook.script import T


def make_copy(n: int):
    @T.prim_func
    def copy(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32", scope="local")):
        for i in range(n):
            with T.block("B"):
                vi = T.axis.spatial(n, i)
                B[vi] = A[vi]
    return copy
