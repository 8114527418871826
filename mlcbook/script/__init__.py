"""``mb.script``: mlcbook's script dialect, the text form of the loop IR.

``print(func)`` shows a PrimFunc in this dialect and :func:`parse` reads it back exactly
(``structural_equal(parse(str(f)), f)`` and ``str(parse(str(f))) == str(f)``);
:func:`prim_func` (also ``T.prim_func``) turns a decorated Python function's source into a
PrimFunc without running it::

    from mlcbook.script import T

    @T.prim_func
    def relu(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
        for i in range(128):
            with T.block("B"):
                vi = T.axis.spatial(128, i)
                B[vi] = T.max(A[vi], T.float32(0))

The dialect, statement by statement:

- ``@T.prim_func`` (``@T.prim_func(num_outputs=2)`` when not 1; ``root=False`` when the body
  is not wrapped in the root block, as in lowered code); parameters
  ``A: T.Buffer(shape, dtype, scope="global")``; ``T.func_attr({...})``;
  ``Y = T.alloc_buffer(shape, dtype)`` at the top allocates in the root block.
- loops: ``range(n)``, ``T.grid(n, m, ...)``, ``T.serial/T.parallel/T.vectorized/T.unroll(n,
  annotations={...}, dtype=...)``.
- ``with T.block("name"):`` then ``vi = T.axis.spatial(extent, binding)`` /
  ``T.axis.reduce`` / ``vi, vk = T.axis.remap("SR", [i, k])``, ``T.where(pred)``,
  ``T.reads(A[vi, 0:n], ...)``, ``T.writes(...)`` (inferred from the body when left out),
  ``T.block_attr({...})``, ``X = T.alloc_buffer(...)``, ``with T.init(): ...``.
- ``A[i, j] = value`` (and ``+=``), ``if``/``elif``/``else``,
  ``with T.allocate(shape, dtype) as X:``, ``T.evaluate(expr)``,
  ``T.evaluate(T.tensor_call("op", A[0], C[0]))`` (a tensor intrinsic's ``impl``).
- expressions: Python operators (``//`` and ``%`` floor), ``and``/``or``/``not``,
  ``T.max``/``T.min``, math functions ``T.exp(x)`` ..., ``T.select(c, a, b)`` (or
  ``T.if_then_else``), ``T.Cast("float32", x)``, constants ``4`` (int32), ``True``,
  ``T.int64(4)``, ``T.float32(0.5)``, ``T.float32("inf")``.
- an IRModule: ``@T.ir_module class Module:`` with one ``@T.prim_func`` method per function.
"""

from __future__ import annotations

from . import namespace as T
from .parser import ir_module, prim_func
from .parser import parse

__all__ = ["T", "prim_func", "ir_module", "parse"]
