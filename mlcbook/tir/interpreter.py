"""The reference interpreter: what every loop-IR program *means*, run on numpy arrays.

    >>> C = np.empty((16, 16), "float32")
    >>> interpret(func, A, B, C)       # writes C in place, returns None

Every later stage (schedules, lowering, codegen) is checked against it. To be fast enough
for a 128x128x128 matmul, a function is translated once into Python source (each buffer a
flat ``array.array``, each access one list index with precomputed strides), compiled, and
cached per function object. ``interpret`` copies the arguments into flat arrays, runs the
code, and copies the outputs back.

Semantics, where Python and the hardware could disagree:

- Loops of every kind run serially, in order. A block binds its iteration variables to
  their values, is skipped when its predicate is false, and runs its ``init`` right before
  its body when every reduce iteration variable equals 0 (always, if it has none).
- Float arithmetic is done in float64 and rounded to the buffer's dtype on every store
  (and on casts): a float32 buffer holds exactly what a float32 store would. Intermediate
  float32 results are *not* rounded, so a result may differ from numpy's float32 by a
  few ulps per operation: a 128-term float32 dot product typically agrees with numpy to
  ~1e-6 relative (compare with ``rtol=1e-5``).
- Integer arithmetic is exact; a value wraps to its dtype (two's complement) when stored or
  cast, which for ``+ - *`` gives the same result as wrapping after each operation.
  ``//`` and ``%`` floor (Python and numpy semantics), and an integer divisor of 0 gives 0:
  ``x // 0 == x % 0 == 0``, as numpy and the compiled code give (this is the one rule;
  :func:`~mlcbook.tir.simplify.simplify` folds the same way). A float -> int cast truncates
  toward zero; NaN or inf raise :class:`~mlcbook.errors.ExecutionError`.
- Float ``/`` and the math functions follow IEEE as numpy does (1/0 = inf, log(0) = -inf,
  sqrt(-1) = nan); ``min``/``max`` on floats propagate NaN like ``np.minimum``/``np.maximum``.
- ``select`` and ``and``/``or`` evaluate only the branch they need, so a guarded load such as
  ``select(i < n, A[i], 0.0)`` never touches ``A[n]``.
- Buffers allocated by a block or an ``Allocate`` are fresh on every entry and *poisoned*:
  floats hold NaN, signed ints their minimum value, uint8 255 and bool True, so a program
  that reads memory it never wrote shows it in its results. Outputs start as the arrays
  the caller passed.
- Every index is checked against its dimension (and every block binding against its
  domain) unless the bounds of the surrounding loops prove it in range; a violation raises
  :class:`~mlcbook.errors.IndexOutOfBoundsError` (or ``BindingMismatchError``) naming the
  access and the value.
"""

from __future__ import annotations

import math
import re
import weakref
from array import array
from typing import Any

import numpy as np

from ..errors import ArgumentError, ExecutionError, TIRError
from ._scalar import GLOBALS, MATH, VALUE, Fault, _rf16, _rf32
from .arith import int_bounds
from .expr import (Binary, Buffer, BufferLoad, Call, Cast, Const, Select, Unary, Var, int_range,
                   is_float, is_int)
from .function import IRModule, PrimFunc
from .functor import Visitor, post_order_visit
from .stmt import Allocate, Block, BlockRealize, BufferStore, Evaluate, For, IfThenElse, SeqStmt
from .verify import verify

__all__ = ["interpret"]


def interpret(func_or_module, *arrays) -> None:
    """Run a PrimFunc (or the ``main`` / only PrimFunc of an IRModule) on numpy arrays.

    Pass one array per parameter, inputs first and outputs last; the outputs are written in
    place. Raises :class:`~mlcbook.errors.ArgumentError` naming the parameter when an array
    has the wrong type, shape or dtype, or an output is read-only.

        >>> interpret(matmul, a, b, c)    # c[...] = a @ b
    """
    func = _as_prim_func(func_or_module)
    kernel = _CACHE.get(func)
    if kernel is None:
        kernel = _CACHE[func] = _compile(func)
    kernel.run(arrays)


def _as_prim_func(obj) -> PrimFunc:
    if isinstance(obj, IRModule):
        func = obj.main()
        if not isinstance(func, PrimFunc):
            raise ArgumentError(
                f"the module's main function is a {type(func).__name__}, not a PrimFunc; the "
                "interpreter runs loop-level functions: pass mod['<name of a PrimFunc>']")
        return func
    if not isinstance(obj, PrimFunc):
        raise ArgumentError(
            f"func_or_module must be a PrimFunc or an IRModule, got {type(obj).__name__}; "
            "build one with mb.te.create_prim_func or @T.prim_func")
    return obj


# --- storage ---------------------------------------------------------------------------------
# dtype -> array.array typecode (None: a Python list of floats) and the poison value that
# fills freshly allocated buffers.
_STORAGE = {"float32": ("f", math.nan), "float64": ("d", math.nan), "float16": (None, math.nan),
            "int8": ("b", -128), "uint8": ("B", 255), "int32": ("i", -2**31),
            "int64": ("q", -2**63), "bool": ("B", 1)}
assert array("i").itemsize == 4 and array("q").itemsize == 8

_CACHE: "weakref.WeakKeyDictionary[PrimFunc, _Kernel]" = weakref.WeakKeyDictionary()


def _to_flat(arr: np.ndarray, dtype: str):
    native = np.ascontiguousarray(arr, dtype=np.dtype(dtype))
    code = _STORAGE[dtype][0]
    if code is None:  # float16: no array.array type code, so a list of Python floats
        return native.astype(np.float64).ravel().tolist()
    return array(code, native.tobytes())


def _from_flat(flat, dtype: str, shape) -> np.ndarray:
    if isinstance(flat, list):
        return np.array(flat, dtype=dtype).reshape(shape)
    return np.frombuffer(flat, dtype=dtype).reshape(shape)


def _fresh(buffer: Buffer):
    code, poison = _STORAGE[buffer.dtype]
    n = math.prod(buffer.shape)
    return [poison] * n if code is None else array(code, [poison]) * n


# --- the compiled kernel ------------------------------------------------------------------------
class _Kernel:
    """A PrimFunc translated to a Python function over flat arrays (holds no reference to it)."""

    def __init__(self, func: PrimFunc, fn, source: str, line_where: list[str]):
        self.name = func.name
        self.params = [(b.name, b.shape, b.dtype) for b in func.params]
        self.num_inputs = len(func.params) - func.num_outputs
        self.fn, self.source, self.line_where = fn, source, line_where
        self.filename = fn.__code__.co_filename

    def signature(self) -> str:
        parts = []
        for k, (name, shape, dtype) in enumerate(self.params):
            out = " (output)" if k >= self.num_inputs else ""
            parts.append(f"{name}: {dtype}{list(shape)}{out}")
        return ", ".join(parts)

    def check(self, arrays) -> None:
        if len(arrays) != len(self.params):
            raise ArgumentError(
                f"function {self.name!r} takes {len(self.params)} arrays ({self.signature()}) "
                f"but got {len(arrays)}; pass one numpy array per parameter, inputs first and "
                "outputs last")
        for k, (arr, (name, shape, dtype)) in enumerate(zip(arrays, self.params)):
            what = f"parameter {name!r} (argument {k + 1} of {self.name!r})"
            if not isinstance(arr, np.ndarray):
                raise ArgumentError(
                    f"{what} must be a numpy array, got {type(arr).__name__}; pass "
                    f"np.asarray(value, dtype={dtype!r})")
            if arr.dtype.name != dtype:
                raise ArgumentError(
                    f"{what} expects dtype {dtype} but got an array of dtype {arr.dtype.name}; "
                    f"convert it with .astype({dtype!r})")
            if tuple(arr.shape) != tuple(shape):
                raise ArgumentError(
                    f"{what} expects shape {tuple(shape)} but got an array of shape "
                    f"{tuple(arr.shape)}")
            if k >= self.num_inputs:
                if not arr.flags.writeable:
                    raise ArgumentError(
                        f"output {what} is a read-only array; pass a writable array, e.g. "
                        f"np.empty({tuple(shape)}, {dtype!r})")
                for j, (other, (oname, _, _)) in enumerate(zip(arrays, self.params)):
                    if j != k and isinstance(other, np.ndarray) and np.shares_memory(arr, other):
                        raise ArgumentError(
                            f"output {what} shares memory with parameter {oname!r}; the "
                            "interpreter reads all inputs before writing, unlike a compiled "
                            "kernel, so pass a separate array (e.g. a .copy())")

    def run(self, arrays) -> None:
        self.check(arrays)
        flats = [_to_flat(a, dtype) for a, (_, _, dtype) in zip(arrays, self.params)]
        try:
            self.fn(*flats)
        except Fault as err:
            raise ExecutionError(f"{err} in {self._where(err)}; guard the operation "
                                 "(e.g. with T.select) or fix the data") from None
        for k in range(self.num_inputs, len(self.params)):
            _, shape, dtype = self.params[k]
            arrays[k][...] = _from_flat(flats[k], dtype, shape)

    def _where(self, err: BaseException) -> str:
        tb, line = err.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        if line is None or not 0 < line <= len(self.line_where):
            return f"function {self.name!r}"
        return self.line_where[line - 1]


# --- translation to Python source -----------------------------------------------------------------
# Python operator precedence, so that the source has only the parentheses it needs (deep
# left-leaning sums would otherwise hit the parser's nesting limit).
_ATOM, _UNARY, _MUL, _ADD, _CMP, _NOT, _AND, _OR, _COND = 15, 12, 11, 10, 5, 4, 3, 2, 1
_PREC = {"+": _ADD, "-": _ADD, "*": _MUL, "//": _MUL, "%": _MUL, "==": _CMP, "!=": _CMP,
         "<": _CMP, "<=": _CMP, ">": _CMP, ">=": _CMP, "and": _AND, "or": _OR}
_MAX_LOOP_NEST = 18  # CPython refuses more than 20 statically nested blocks in one function
_BITS = {"int8": 8, "uint8": 8, "int32": 32, "int64": 64}


def _paren(code: tuple[str, int], need: int) -> str:
    text, prec = code
    return text if prec >= need else f"({text})"


def _wrap_code(text: str, prec: int, dtype: str) -> str:
    lo, hi = int_range(dtype)
    if lo == 0:
        return f"({_paren((text, prec), 9)} & {hi})"
    return f"((({_paren((text, prec), _ADD + 1)} + {-lo}) & {hi - lo}) - {-lo})"


def _compile(func: PrimFunc) -> _Kernel:
    tr = _Translator(func)
    filename = f"<mlcbook.interpret:{func.name}>"
    try:
        verify(func)
        source = tr.translate()
        code = compile(source, filename, "exec")
    except (SyntaxError, RecursionError, MemoryError) as err:
        raise TIRError(
            f"function {func.name!r} is too deeply nested for the interpreter ({err}); "
            "split the long expression into several blocks") from None
    namespace = dict(GLOBALS, _S=tr.messages, _T=tr.templates)
    exec(code, namespace)
    return _Kernel(func, namespace["_kernel"], source, tr.line_where)


class _Loop:
    """A loop being emitted: where its body starts, and the invariant lines hoisted into it."""

    def __init__(self, pos: int, indent: int):
        self.pos, self.indent = pos, indent
        self.lines: list[str] = []
        self.temps: dict[str, str] = {}


class _Translator(Visitor):
    """Emit one Python function for a PrimFunc. Statements are visited (``visit_<Node>``
    appends lines); expressions are translated by ``expr`` into ``(source, precedence)``."""

    def __init__(self, func: PrimFunc):
        self.func = func
        self.lines: list[str] = []
        self.line_where: list[str] = []
        self.messages: list[str] = []     # error messages of checked accesses, _S in the code
        self.templates: list = []         # poisoned storage copied on allocation, _T in the code
        self.names: dict[Any, str] = {}   # Var / Buffer -> Python name in the current scope
        self.ranges: dict[Var, tuple[int, int]] = {}
        self.indent = 0
        self.loop_nest = 0
        self.counter = 0
        self.where = f"function {func.name!r}"
        self.stmt_text = ""
        self.loops: list[_Loop] = []      # the loops around the current line, outermost first
        self.level: dict[Var, int | None] = {}  # loop index binding a var (None: not a loop var)

    # --- plumbing ---------------------------------------------------------------------------------
    def fresh(self, name: str) -> str:
        self.counter += 1
        clean = re.sub(r"\W", "_", name).lstrip("_") or "v"
        return f"{clean}_{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        where = self.where + (f", at `{self.stmt_text}`" if self.stmt_text else "")
        self.line_where.append(where)

    def body(self, stmt) -> None:
        """Emit ``stmt`` one level deeper (with ``pass`` if it produced no line)."""
        self.indent += 1
        n = len(self.lines)
        self.visit(stmt)
        if len(self.lines) == n:
            self.emit("pass")
        self.indent -= 1

    def bind(self, key, name: str, rng=None) -> tuple:
        saved = (key, self.names.get(key), self.ranges.get(key))
        self.names[key] = name
        if isinstance(key, Var):
            if rng is None:
                self.ranges.pop(key, None)
            else:
                self.ranges[key] = rng
        return saved

    def unbind(self, saved_list) -> None:
        for key, name, rng in reversed(saved_list):
            if name is None:
                self.names.pop(key, None)
            else:
                self.names[key] = name
            if isinstance(key, Var):
                if rng is None:
                    self.ranges.pop(key, None)
                else:
                    self.ranges[key] = rng

    def translate(self) -> str:
        header, saved = [], []
        for b in self.func.params:
            name = self.fresh(b.name)
            header.append(name)
            saved.append(self.bind(b, name))
        self.lines.append(f"def _kernel({', '.join(header)}):")
        self.line_where.append(self.where)
        self.body(self.func.body)
        self.unbind(saved)
        return "\n".join(self.lines) + "\n"

    def generic_visit(self, node) -> None:
        raise TIRError(f"the interpreter cannot run a {type(node).__name__} statement")

    def allocate(self, buffer: Buffer) -> tuple:
        self.templates.append(_fresh(buffer))
        name = self.fresh(buffer.name)
        self.emit(f"{name} = _T[{len(self.templates) - 1}][:]")
        return self.bind(buffer, name)

    def message(self, text: str) -> int:
        self.messages.append(text)
        return len(self.messages) - 1

    # --- statements -------------------------------------------------------------------------------
    def visit_SeqStmt(self, s: SeqStmt) -> None:
        for stmt in s.stmts:
            self.visit(stmt)

    def visit_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, Const):
            self.stmt_text = str(s.value)
            self.emit(f"_ = {self.expr(s.value)[0]}")
            self.stmt_text = ""

    def visit_BufferStore(self, s: BufferStore) -> None:
        buf, dtype = s.buffer, s.buffer.dtype
        self.stmt_text = f"{buf.name}[{', '.join(map(str, s.indices))}] = {s.value}"
        value = self.expr(s.value)
        if dtype == "float16":
            text = f"_rf16({value[0]})"
        elif is_int(dtype):
            text = self.int_in_range(s.value, value, dtype)[0]
        else:
            text = value[0]
        self.emit(f"{self.buffer_name(buf)}[{self.flat_index(buf, s.indices)}] = {text}")
        self.stmt_text = ""

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.stmt_text = f"if {s.cond}"
        self.emit(f"if {self.expr(s.cond)[0]}:")
        self.stmt_text = ""
        self.body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.body(s.else_case)

    def visit_Allocate(self, s: Allocate) -> None:
        saved = self.allocate(s.buffer)
        self.visit(s.body)
        self.unbind([saved])

    def visit_For(self, s: For) -> None:
        if self.loop_nest >= _MAX_LOOP_NEST:
            # continue the nest in a fresh function: its own limit on nested blocks
            fn = self.fresh("nest")
            self.emit(f"def {fn}():")
            outer, self.loop_nest = self.loop_nest, 0
            self.body(s)
            self.loop_nest = outer
            self.emit(f"{fn}()")
            return
        extent = self.expr(s.extent)[0]
        if isinstance(s.extent, Const):
            rng = (0, s.extent.value - 1)
        else:
            b = int_bounds(s.extent, self.ranges)
            rng = (0, b[1] - 1) if b is not None and b[1] >= 1 else None
        name = self.fresh(s.loop_var.name)
        self.emit(f"for {name} in range({extent}):")
        saved = self.bind(s.loop_var, name, rng)
        loop = _Loop(len(self.lines), self.indent + 1)
        self.loops.append(loop)
        self.level[s.loop_var] = len(self.loops) - 1
        self.loop_nest += 1
        self.body(s.body)
        self.loop_nest -= 1
        self.loops.pop()
        self.lines[loop.pos:loop.pos] = loop.lines  # hoisted index arithmetic first
        self.line_where[loop.pos:loop.pos] = [self.where] * len(loop.lines)
        self.unbind([saved])

    def visit_BlockRealize(self, s: BlockRealize) -> None:
        block: Block = s.block
        pred = s.predicate
        if isinstance(pred, Const) and not pred.value:
            return
        outer_where = self.where
        guarded = not isinstance(pred, Const)
        if guarded:
            self.stmt_text = f"predicate {pred}"
            self.emit(f"if {self.expr(pred)[0]}:")
            self.stmt_text = ""
            self.indent += 1
        first_line = len(self.lines)
        if block.name != "root" or block.iter_vars:
            self.where = f"block {block.name!r}"
        saved = [self.bind_iter_var(iv, value) for iv, value in zip(block.iter_vars, s.iter_values)]
        saved += [self.allocate(b) for b in block.alloc_buffers]
        if block.init is not None:
            reduce = [self.names[iv.var] for iv in block.iter_vars if iv.kind == "reduce"]
            if reduce:
                self.emit(f"if {' and '.join(f'{n} == 0' for n in reduce)}:")
                self.body(block.init)
            else:
                self.visit(block.init)
        self.visit(block.body)
        self.unbind(saved)
        self.where = outer_where
        if guarded:
            if len(self.lines) == first_line:
                self.emit("pass")
            self.indent -= 1

    def bind_iter_var(self, iv, value) -> tuple:
        b = int_bounds(value, self.ranges)
        if isinstance(iv.extent, Const):
            hi = iv.extent.value - 1
        else:
            eb = int_bounds(iv.extent, self.ranges)
            hi = None if eb is None else eb[1] - 1
        proven = b is not None and hi is not None and b[0] >= 0 and b[1] <= hi
        if isinstance(value, Var) and proven:
            name = self.expr(value)[0]  # alias: the loop variable already holds the value
            self.level[iv.var] = self.level.get(value)
        else:
            self.level[iv.var] = None
            name = self.fresh(iv.var.name)
            self.stmt_text = f"{iv.var.name} = {value}"
            self.emit(f"{name} = {self.expr(value)[0]}")
            if not proven:
                k = self.message(
                    f"block {self.blockname()}: iteration variable {iv.var.name} is bound to "
                    f"{value} = {VALUE}, outside its domain [0, {iv.extent}); fix the binding or "
                    "add a predicate (T.where) that excludes this iteration")
                extent = _paren(self.expr(iv.extent), _CMP + 1)
                self.emit(f"if not 0 <= {name} < {extent}: _bad_binding(_S[{k}], {name})")
            self.stmt_text = ""
        lo = 0 if b is None else max(0, b[0])
        top = hi if b is None else (b[1] if hi is None else min(hi, b[1]))
        return self.bind(iv.var, name, None if top is None else (lo, top))

    def blockname(self) -> str:
        return self.where.removeprefix("block ")

    # --- buffer access ----------------------------------------------------------------------------
    def buffer_name(self, buf: Buffer) -> str:
        name = self.names.get(buf)
        if name is None:
            raise TIRError(f"buffer {buf.name!r} is used but neither a parameter nor allocated")
        return name

    def flat_index(self, buf: Buffer, indices) -> str:
        terms, offset, stride = [], 0, 1
        hoisted, level = [], -1
        strides = []
        for size in reversed(buf.shape):
            strides.append(stride)
            stride *= size
        strides.reverse()
        for dim, (idx, size, st) in enumerate(zip(indices, buf.shape, strides)):
            b = int_bounds(idx, self.ranges)
            if isinstance(idx, Const) and b is not None and 0 <= b[0] <= b[1] < size:
                offset += idx.value * st
                continue
            code = self.expr(idx)
            if b is None or b[0] < 0 or b[1] >= size:
                shown = ", ".join(map(str, indices))
                k = self.message(
                    f"{buf.name}[{shown}] in {self.where}: index {idx} of dimension {dim} is "
                    f"{VALUE} but that dimension has size {size}; keep every index in "
                    f"[0, {size - 1}]")
                code = (f"(_t if 0 <= (_t := {code[0]}) < {size} else _oob(_S[{k}], _t))", _ATOM)
                lvl = None
            else:
                lvl = self.invariant_level(idx)
            term = _paren(code, _MUL) + (f" * {st}" if st != 1 else "")
            if lvl is not None and lvl < len(self.loops) - 1:
                hoisted.append(term)
                level = max(level, lvl)
            else:
                terms.append(term)
        if hoisted:
            if offset:
                hoisted.append(str(offset))
                offset = 0
            if len(hoisted) == 1 and hoisted[0].isidentifier():
                terms.insert(0, hoisted[0])  # a bare variable: nothing to save
            else:
                terms.insert(0, self.hoist(" + ".join(hoisted), level))
        if offset or not terms:
            terms.append(str(offset))
        return " + ".join(terms)

    def invariant_level(self, idx) -> int | None:
        """The innermost loop whose variable ``idx`` uses, if ``idx`` is pure arithmetic of loop
        variables (so it can be computed once per iteration of that loop); else None."""
        level, pure = -1, True

        def visit(node):
            nonlocal level, pure
            if isinstance(node, Var):
                lvl = self.level.get(node)
                if lvl is None:
                    pure = False
                else:
                    level = max(level, lvl)
            elif isinstance(node, Binary):
                # integer arithmetic cannot fault (x // 0 is 0), so hoisting it is safe
                pure &= node.op in ("+", "-", "*", "//", "%", "min", "max")
            elif not isinstance(node, Const) and not (isinstance(node, Unary) and node.op == "-"):
                pure = False

        post_order_visit(idx, visit)
        return level if pure and level >= 0 else None

    def hoist(self, text: str, level: int) -> str:
        """A variable holding ``text``, computed at the top of the body of loop ``level``."""
        loop = self.loops[level]
        name = loop.temps.get(text)
        if name is None:
            name = loop.temps[text] = self.fresh("ix")
            loop.lines.append("    " * loop.indent + f"{name} = {text}")
        return name

    # --- expressions ------------------------------------------------------------------------------
    def expr(self, e) -> tuple[str, int]:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            raise TIRError(f"the interpreter cannot evaluate a {type(e).__name__} expression")
        return method(e)

    def expr_Var(self, e: Var) -> tuple[str, int]:
        name = self.names.get(e)
        if name is None:
            raise TIRError(f"variable {e.name!r} is used in {self.where} but never defined")
        return name, _ATOM

    def expr_Const(self, e: Const) -> tuple[str, int]:
        v, dtype = e.value, e.dtype
        if dtype == "bool":
            return repr(bool(v)), _ATOM
        if is_int(dtype):
            lo, hi = int_range(dtype)
            v = (int(v) - lo) % (hi - lo + 1) + lo
            return repr(v), (_ATOM if v >= 0 else _UNARY)
        v = {"float16": _rf16, "float32": _rf32}.get(dtype, float)(float(v))
        if math.isnan(v):
            return "_nan", _ATOM
        if math.isinf(v):
            return ("_inf", _ATOM) if v > 0 else ("-_inf", _UNARY)
        return repr(v), (_UNARY if math.copysign(1.0, v) < 0 else _ATOM)

    def expr_BufferLoad(self, e: BufferLoad) -> tuple[str, int]:
        return f"{self.buffer_name(e.buffer)}[{self.flat_index(e.buffer, e.indices)}]", _ATOM

    def expr_Unary(self, e: Unary) -> tuple[str, int]:
        if e.op == "not":
            return f"not {_paren(self.expr(e.a), _NOT)}", _NOT
        return f"-{_paren(self.expr(e.a), _UNARY)}", _UNARY

    def expr_Binary(self, e: Binary) -> tuple[str, int]:
        a, b = self.expr(e.a), self.expr(e.b)
        op, flt = e.op, is_float(e.a.dtype)
        if op in ("min", "max"):
            fn = ("_f" + op) if flt else op
            return f"{fn}({a[0]}, {b[0]})", _ATOM
        if op == "/":
            return f"_fdiv({a[0]}, {b[0]})", _ATOM
        if op in ("//", "%") and not self.nonzero(e.b):
            return f"{'_idiv' if op == '//' else '_imod'}({a[0]}, {b[0]})", _ATOM
        prec = _PREC[op]
        if prec == _CMP:  # not chained: a < b < c means something else in Python
            return f"{_paren(a, _CMP + 1)} {op} {_paren(b, _CMP + 1)}", _CMP
        return f"{_paren(a, prec)} {op} {_paren(b, prec + 1)}", prec

    def nonzero(self, e) -> bool:
        """Whether the divisor ``e`` is provably nonzero, so Python's ``//`` / ``%`` can run
        as they are (the common case: index arithmetic by a constant)."""
        if isinstance(e, Const):
            return e.value != 0
        b = int_bounds(e, self.ranges)
        return b is not None and (b[0] > 0 or b[1] < 0)

    def expr_Select(self, e: Select) -> tuple[str, int]:
        t, c, f = self.expr(e.true_value), self.expr(e.cond), self.expr(e.false_value)
        return f"{_paren(t, _OR)} if {_paren(c, _OR)} else {_paren(f, _COND)}", _COND

    def expr_Call(self, e: Call) -> tuple[str, int]:
        args = ", ".join(self.expr(a)[0] for a in e.args)
        return f"{MATH[e.name]}({args})", _ATOM

    def expr_Cast(self, e: Cast) -> tuple[str, int]:
        src, dst = e.value.dtype, e.dtype
        code = self.expr(e.value)
        if src == dst:
            return code
        if dst == "bool":
            return f"{_paren(code, _CMP + 1)} != 0", _CMP
        if src == "bool":
            return (f"int({code[0]})" if is_int(dst) else f"float({code[0]})"), _ATOM
        if is_int(dst):
            if is_float(src):
                return _wrap_code(f"_f2i({code[0]})", _ATOM, dst), _ATOM
            # wrap into the narrower of the two types: C semantics of int -> int casts
            narrow = dst if _BITS[dst] <= _BITS[src] else src
            return self.int_in_range(e.value, code, narrow)
        if is_int(src):  # int -> float: the source value as its own dtype wraps it
            code = (f"float({self.int_in_range(e.value, code, src)[0]})", _ATOM)
        if dst == "float32" and src != "float16":
            return f"_rf32({code[0]})", _ATOM
        if dst == "float16":
            return f"_rf16({code[0]})", _ATOM
        return code

    def int_in_range(self, e, code: tuple[str, int], dtype: str) -> tuple[str, int]:
        """``code`` wrapped to ``dtype``'s range, unless ``e`` provably lies in it already."""
        if isinstance(e, (BufferLoad, Cast)) and e.dtype == dtype:
            return code  # a load of that dtype, or a cast to it, is in range already
        b = int_bounds(e, self.ranges)
        lo, hi = int_range(dtype)
        if b is not None and lo <= b[0] and b[1] <= hi:
            return code
        return _wrap_code(code[0], code[1], dtype), _ATOM
