"""``mb.graph``: the graph IR. A model is a :class:`Function` over typed tensors — inputs,
named weights, op calls, tuples, and ``call_tir`` into PrimFuncs of the same
:class:`IRModule`.

    >>> import mlcbook as mb
    >>> from mlcbook.graph import op
    >>> x = mb.graph.Var("x", mb.graph.TensorType((1, 4)))
    >>> f = mb.graph.Function([x], op.relu(x))
    >>> print(f)
    def main(x: Tensor((1, 4), "float32")) -> Tensor((1, 4), "float32"):
        relu: Tensor((1, 4), "float32") = op.relu(x)
        return relu
    >>> mb.graph.interpret(f, np.ones((1, 4), "float32"))     # numpy reference semantics
    >>> exe = mb.compile(f); exe(np.ones((1, 4), "float32"))   # native code
    >>> mb.graph.draw(f)                                        # an SVG picture of it

``legalize`` lowers every op call to ``call_tir`` of a PrimFunc; ``compile`` schedules and
builds them into an :class:`Executable`, whose ``save`` writes a file that ``load`` reads.

The modules here are the IR and its lowering (``fusion``, ``legalize``); each step of
``compile`` after them has a room: :mod:`.passes` (graph -> graph), :mod:`.memory` (the run
plan and its arena), :mod:`.kernels` (the kernels' schedules), :mod:`.run` (executables).
"""

from ..ops.types import Attrs, TensorType, TupleType, Type
from ..tir.function import IRModule
from .builder import Builder, op
from .expr import (Call, CallTIR, Constant, Expr, Function, Tuple, TupleGetItem, Var, call,
                   children, post_order)
from .functor import ExprMutator, ExprVisitor
from . import kernels, memory, passes, run
from .batch import BatchExecutable, SymbolicBatchModule
from .compile import compile  # noqa: A004 - mb.compile, as in TVM
from .draw import GraphDrawing, draw
from .run import Executable, load
from .fusion import explain_fusion, fuse_ops
from .interpret import interpret
from .legalize import legalize
from .params import declarations, declare
from .printer import module_to_str
from .structural import assert_structural_equal, structural_equal, structural_hash

__all__ = ["Attrs", "TensorType", "TupleType", "Type", "IRModule", "Builder", "op", "Call",
           "CallTIR", "Constant", "Expr", "Function", "Tuple", "TupleGetItem", "Var", "call",
           "children", "post_order", "ExprMutator", "ExprVisitor", "interpret", "module_to_str",
           "legalize", "compile", "load", "Executable", "BatchExecutable", "SymbolicBatchModule",
           "draw", "GraphDrawing", "passes", "kernels", "memory", "run",
           "fuse_ops", "explain_fusion", "declarations", "declare",
           "assert_structural_equal", "structural_equal", "structural_hash"]
