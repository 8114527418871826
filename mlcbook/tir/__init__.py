"""``mb.tir``: the loop IR — expressions, buffers, statements with blocks, functions, and the
tools that give programs meaning (``evaluate``, the reference evaluator, and ``interpret``,
the fast interpreter), text (printer) and identity (structural equality).

    >>> import mlcbook as mb
    >>> i = mb.tir.Var("i")
    >>> mb.tir.max(i, 0)
"""

from .expr import (Binary, Buffer, BufferLoad, Call, Cast, Const, PrimExpr, Select, Unary, Var,
                   DTYPES, abs, as_expr, cast, ceil, const, erf, exp, floor, if_then_else,
                   infinity, log, logical_and, logical_not, logical_or, max, min, neg_infinity,
                   pow, TensorCall, rsqrt, select, sigmoid, sqrt, tanh, var)
from .stmt import (Allocate, Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For,
                   IfThenElse, IterVar, KEEP_MATERIALIZED, Range, SeqStmt, Stmt, UNROLLED_TILE,
                   seq)
from .function import IRModule, PrimFunc, root_block_realize
from .functor import Mutator, Visitor, post_order_visit, replace_buffers, substitute
from . import printer  # noqa: F401 - registers how IR nodes print
from .structural import assert_structural_equal, structural_equal, structural_hash
from .verify import verify
from .interpreter import interpret
from .reference import evaluate
from .tensor_intrin import TensorIntrin
from .int_math import round_half_even, saturate
from . import x86_intrinsics  # noqa: F401 - registers the built-in x86 intrinsics
from . import analysis, arith  # noqa: E402 - mb.tir.analysis and mb.tir.arith, the facts passes share
