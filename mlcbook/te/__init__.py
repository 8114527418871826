"""``mb.te``: tensor expressions, the declarative way to write a tensor program.

    >>> import mlcbook as mb
    >>> A = mb.te.placeholder((128, 128), "float32", name="A")
    >>> B = mb.te.placeholder((128, 128), "float32", name="B")
    >>> k = mb.te.reduce_axis(128, name="k")
    >>> C = mb.te.compute((128, 128), lambda i, j: mb.te.sum(A[i, k] * B[k, j], axis=k), name="C")
    >>> func = mb.te.create_prim_func([A, B, C])

``te.sum``, ``te.max`` and ``te.min`` are reducers (they shadow the builtins only as
attributes of this package; ``te.ops.sum`` is the operator that sums a tensor). ``te.ops``
is the operator library (matmul, conv, softmax, ...) built from these pieces: the one
implementation that the graph ops of ``mb.ops`` legalize to.
"""

from . import ops
from .prim_func import create_prim_func
from .reduction import Reduce, ReduceAxis, max, min, reduce_axis, sum  # noqa: A004
from .tensor import Tensor, compute, placeholder

__all__ = ["placeholder", "compute", "reduce_axis", "sum", "max", "min", "create_prim_func",
           "Tensor", "Reduce", "ReduceAxis", "ops"]
