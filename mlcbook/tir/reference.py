"""The reference evaluator: what every loop-IR program *means*, as a plain tree walk.

    >>> C = np.empty((4, 4), "float32")
    >>> evaluate(func, A, B, C)        # writes C in place, returns None

This module is the specification of the IR's semantics. It walks the program node by node,
checks every buffer index and every block binding, and optimizes nothing, so that a bug in
the analyses the fast interpreter (:func:`mlcbook.tir.interpret`) and the code generator
rely on cannot hide in it too. It is slow (a few microseconds per node): use it on small
shapes, and the interpreter, which must agree with it exactly, on big ones.

The meaning, where Python and the hardware could disagree:

- Loops of every kind run serially, in order; a loop's extent is evaluated once, before its
  first iteration. A block is skipped when its predicate is false; otherwise it binds its
  iteration variables (a value outside ``[0, extent)`` raises
  :class:`~mlcbook.errors.BindingMismatchError`), allocates its buffers, runs its ``init``
  when every reduce iteration variable equals 0 (always, if it has none), then its body.
- Float arithmetic is done in float64 and rounded to the buffer's dtype on every store
  (and on casts): a float32 buffer holds exactly what a float32 store would. bfloat16 rounds
  through float32 (to float32, then to bfloat16's upper 16 bits, ties to even), as compiled
  code does. Intermediate
  float32 results are *not* rounded, so a result may differ from numpy's float32 by a few
  ulps per operation (compare with ``rtol=1e-5``).
- Integer arithmetic is exact; a value wraps to its dtype (two's complement) when stored or
  cast (an int -> int cast wraps the source value to the target type, as C does), which for
  ``+ - *`` gives the same result as wrapping after each operation. Types other than int32
  and int64 (int8 ... uint64) also wrap the operands of comparisons, ``//``, ``%`` and
  min/max, so ``uint32(1) - uint32(2) > 0`` is True, as in compiled code. ``//`` and ``%`` floor
  (Python and numpy semantics), and a divisor of 0 gives 0: ``x // 0 == x % 0 == 0``, as
  numpy and the compiled code give. A float -> int cast truncates toward zero; NaN or inf
  raise :class:`~mlcbook.errors.ExecutionError`.
- Float ``/`` and the math functions follow IEEE as numpy does (1/0 = inf, log(0) = -inf,
  sqrt(-1) = nan); ``min``/``max`` on floats propagate NaN like ``np.minimum``/``np.maximum``.
- ``select`` and ``and``/``or`` evaluate only the operand they need, so a guarded load such
  as ``select(i < n, A[i], 0.0)`` never touches ``A[n]``.
- Buffers allocated by a block or an ``Allocate`` are fresh on every entry and *poisoned*:
  floats hold NaN, signed ints their minimum value, unsigned ints their maximum and bool True, so a program
  that reads memory it never wrote shows it in its results. Outputs start as the arrays
  the caller passed, and are written back only when the whole program ran.
- Every index is checked against its dimension; a violation raises
  :class:`~mlcbook.errors.IndexOutOfBoundsError` naming the buffer, the index and its value.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from ..errors import BindingMismatchError, ExecutionError, IndexOutOfBoundsError, TIRError
from .arguments import Signature, as_prim_func
from .expr import INT_DTYPES, Buffer, Const, is_float, is_int
from .functor import ExprFunctor, StmtFunctor
from .stmt import BufferStore, IfThenElse
from .scalar import (MATH_IMPL, POISON, Fault, fdiv, float_to_int, fmax, fmin, idiv, imod,
                     reinterpret, round_bf16, round_f16, round_f32, wrap)
from .verify import verify

__all__ = ["evaluate"]


def evaluate(func_or_module, *arrays) -> None:
    """Run a PrimFunc (or the ``main`` / only PrimFunc of an IRModule) on numpy arrays by
    walking its tree, with every access checked.

    Takes the same arguments as :func:`~mlcbook.tir.interpret` (one array per parameter,
    inputs first, outputs written in place) and gives the same results, bit for bit.

        >>> evaluate(matmul, a, b, c)      # c[...] = a @ b, slowly and surely
    """
    func = as_prim_func(func_or_module)
    sig = Signature.of(func)
    sig.check(arrays)
    ev = _Evaluator(func.name)
    for buf, arr in zip(func.params, arrays):
        ev.buffers[buf] = _flat(arr, buf.dtype)
    try:
        verify(func)
        ev.stmt(func.body)
    except Fault as err:
        raise ExecutionError(f"{err} in {ev.location()}; guard the operation (e.g. with "
                             "T.select) or fix the data") from None
    except RecursionError:
        raise TIRError(f"function {func.name!r} is too deeply nested for the reference "
                       "evaluator; split the long expression into several blocks") from None
    for k in range(sig.num_inputs, len(func.params)):
        buf = func.params[k]
        arrays[k][...] = np.array(ev.buffers[buf], dtype=buf.dtype).reshape(buf.shape)


def _flat(arr: np.ndarray, dtype: str) -> list:
    """``arr`` as a flat list of Python numbers: floats of any width as Python floats."""
    if is_float(dtype):
        return arr.astype(np.float64).ravel().tolist()
    return arr.ravel().tolist()


#: integer types whose operands are wrapped before an operation wrapping would change
#: (compare, divide, min/max), as compiled code computes them in their own width: uint32
#: ``(1 - 2) // 2`` is 2147483647. int32 and int64 are not: their overflow is a program's bug.
_WRAPPED_OPERANDS = tuple(d for d in INT_DTYPES if d not in ("int32", "int64"))
_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}
_ARITH = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": fdiv, "//": idiv,
          "%": imod}


def _round(value: float, dtype: str) -> float:
    if dtype == "float32":
        return round_f32(value)
    if dtype == "float16":
        return round_f16(value)
    if dtype == "bfloat16":
        return round_bf16(value)
    return value


class _Evaluator(StmtFunctor, ExprFunctor):
    """``stmt(s)`` runs a statement; ``expr(e)`` returns an expression's value (a Python
    int, float or bool). ``env`` maps variables to values, ``buffers`` buffers to flat
    lists."""

    def __init__(self, name: str):
        self.env: dict = {}
        self.buffers: dict = {}
        self.where = f"function {name!r}"
        self.at = None  # the statement being run, for error messages

    def location(self) -> str:
        s = self.at
        if isinstance(s, BufferStore):
            indices = ", ".join(map(str, s.indices))
            return f"{self.where}, at `{s.buffer.name}[{indices}] = {s.value}`"
        if isinstance(s, IfThenElse):
            return f"{self.where}, at `if {s.cond}`"
        if s is not None:
            return f"{self.where}, at `{s}`"
        return self.where

    # --- statements -------------------------------------------------------------------------
    def stmt_SeqStmt(self, s) -> None:
        for x in s.stmts:
            self.stmt(x)

    def stmt_Evaluate(self, s) -> None:
        self.at = s.value
        self.expr(s.value)

    def stmt_BufferStore(self, s) -> None:
        buf = s.buffer
        self.at = s
        value = self.expr(s.value)
        if is_int(buf.dtype):
            value = wrap(value, buf.dtype)
        elif is_float(buf.dtype):
            value = _round(value, buf.dtype)
        self.storage(buf)[self.offset(buf, s.indices)] = value

    def stmt_IfThenElse(self, s) -> None:
        self.at = s
        if self.expr(s.cond):
            self.stmt(s.then_case)
        elif s.else_case is not None:
            self.stmt(s.else_case)

    def stmt_Allocate(self, s) -> None:
        with self.allocated([s.buffer]):
            self.stmt(s.body)

    def stmt_For(self, s) -> None:
        var = s.loop_var
        saved = self.env.get(var, _UNBOUND)
        for k in range(self.expr(s.extent)):
            self.env[var] = k
            self.stmt(s.body)
        self.restore(var, saved)

    def stmt_BlockRealize(self, s) -> None:
        if not self.expr(s.predicate):
            return
        block = s.block
        outer = self.where
        if block.name != "root" or block.iter_vars:
            self.where = f"block {block.name!r}"
        values = [self.expr(v) for v in s.iter_values]
        for iv, value, expr in zip(block.iter_vars, values, s.iter_values):
            extent = self.expr(iv.extent)
            if not 0 <= value < extent:
                raise BindingMismatchError(
                    f"block {block.name!r}: iteration variable {iv.var.name} is bound to "
                    f"{expr} = {value}, outside its domain [0, {iv.extent}); fix the binding "
                    "or add a predicate (T.where) that excludes this iteration")
        saved = [(iv.var, self.env.get(iv.var, _UNBOUND)) for iv in block.iter_vars]
        for iv, value in zip(block.iter_vars, values):
            self.env[iv.var] = value
        with self.allocated(block.alloc_buffers):
            if block.init is not None and all(
                    self.env[iv.var] == 0 for iv in block.iter_vars if iv.kind == "reduce"):
                self.stmt(block.init)
            self.stmt(block.body)
        for var, value in reversed(saved):
            self.restore(var, value)
        self.where = outer

    # --- buffers ----------------------------------------------------------------------------
    def allocated(self, buffers):
        return _Scope(self.buffers, buffers)

    def storage(self, buf: Buffer) -> list:
        try:
            return self.buffers[buf]
        except KeyError:
            raise TIRError(f"buffer {buf.name!r} is used in {self.where} but is neither a "
                           "parameter nor allocated there") from None

    def offset(self, buf: Buffer, indices) -> int:
        flat = 0
        for dim, (index, size) in enumerate(zip(indices, buf.shape)):
            value = self.expr(index)
            if not 0 <= value < size:
                shown = ", ".join(map(str, indices))
                raise IndexOutOfBoundsError(
                    f"{buf.name}[{shown}] in {self.where}: index {index} of dimension {dim} is "
                    f"{value} but that dimension has size {size}; keep every index in "
                    f"[0, {size - 1}]")
            flat = flat * size + value
        return flat

    def restore(self, var, value) -> None:
        if value is _UNBOUND:
            self.env.pop(var, None)
        else:
            self.env[var] = value

    # --- expressions ------------------------------------------------------------------------
    def expr_Var(self, e):
        try:
            return self.env[e]
        except KeyError:
            raise TIRError(f"variable {e.name!r} is used in {self.where} but never "
                           "defined") from None

    def expr_Const(self, e: Const):
        if e.dtype == "bool":
            return bool(e.value)
        if is_int(e.dtype):
            return wrap(int(e.value), e.dtype)
        return _round(float(e.value), e.dtype)

    def expr_BufferLoad(self, e):
        value = self.storage(e.buffer)[self.offset(e.buffer, e.indices)]
        return bool(value) if e.buffer.dtype == "bool" else value

    def expr_Unary(self, e):
        a = self.expr(e.a)
        return (not a) if e.op == "not" else -a

    def expr_Binary(self, e):
        op = e.op
        if op == "and":
            return self.expr(e.a) and self.expr(e.b)
        if op == "or":
            return self.expr(e.a) or self.expr(e.b)
        a, b = self.expr(e.a), self.expr(e.b)
        if e.a.dtype in _WRAPPED_OPERANDS and op not in ("+", "-", "*"):
            a, b = wrap(a, e.a.dtype), wrap(b, e.a.dtype)
        if op in ("min", "max"):
            if is_float(e.a.dtype):
                return (fmin if op == "min" else fmax)(a, b)
            return min(a, b) if op == "min" else max(a, b)
        if op in _COMPARE:
            return _COMPARE[op](a, b)
        return _ARITH[op](a, b)

    def expr_Select(self, e):
        return self.expr(e.true_value) if self.expr(e.cond) else self.expr(e.false_value)

    def expr_Call(self, e):
        return MATH_IMPL[e.name](*(self.expr(a) for a in e.args))

    def expr_Reinterpret(self, e):
        return reinterpret(self.expr(e.value), e.value.dtype, e.dtype)

    def expr_Cast(self, e):
        src, dst = e.value.dtype, e.dtype
        v = self.expr(e.value)
        if src == dst:
            return v
        if dst == "bool":
            return v != 0
        if src == "bool":
            return int(v) if is_int(dst) else float(v)
        if is_int(dst):
            if is_float(src):
                return wrap(float_to_int(v), dst)
            # the source value (its own dtype's) wrapped to the target, as C casts do:
            # int8 -1 -> uint32 4294967295, uint8 255 -> int32 255
            return wrap(wrap(v, src), dst)
        if is_int(src):
            v = float(wrap(v, src))
        if dst == "float32" and src in ("float16", "bfloat16"):
            return v  # every float16 and bfloat16 value is a float32 value
        return _round(v, dst)


class _Unbound:
    """Marks a variable that had no value before a scope bound it."""


_UNBOUND = _Unbound()


class _Scope:
    """``with``: fresh poisoned storage for ``buffers``, removed again on exit."""

    def __init__(self, table: dict, buffers):
        self.table, self.buffers = table, list(buffers)

    def __enter__(self):
        for buf in self.buffers:
            self.table[buf] = [POISON[buf.dtype]] * math.prod(buf.shape)

    def __exit__(self, *exc) -> None:
        for buf in self.buffers:
            self.table.pop(buf, None)
