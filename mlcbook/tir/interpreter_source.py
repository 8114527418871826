"""The interpreter's translation of a PrimFunc into one Python function over flat arrays.

    >>> py = translate(func)
    >>> print(py.source)            # def _kernel(A_1, B_2, C_3): ...

Each buffer becomes a flat ``array.array`` (a list for float16) and each access one list
index with precomputed strides; index arithmetic that only depends on loop variables is
hoisted out of the innermost loop, and the bounds checks that ``int_bounds`` proves
unnecessary are left out. The meaning is the reference evaluator's
(:mod:`mlcbook.tir.reference`); :func:`mlcbook.tir.interpret` runs the result.
"""

from __future__ import annotations

import math
import re
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import TIRError
from .arith import int_bounds
from .expr import (Binary, Buffer, BufferLoad, Cast, Const, Reinterpret, Select, Unary, Var,
                   bits, int_range, is_float, is_int, is_unsigned)
from .function import PrimFunc
from .functor import ExprFunctor, StmtFunctor, post_order_visit
from .scalar import MATH, POISON, VALUE, round_bf16, round_f16, round_f32
from .stmt import Allocate, Block, BlockRealize, BufferStore, Evaluate, For, IfThenElse, SeqStmt

__all__ = ["PySource", "translate", "to_flat", "from_flat"]


@dataclass(frozen=True)
class PySource:
    """A translated PrimFunc: the source of ``_kernel``, the error messages of its checked
    accesses (``_S`` in the code), the poisoned storage it copies on allocation (``_T``), and
    for every source line the place in the program it comes from."""

    source: str
    messages: list
    templates: list
    line_where: list


def translate(func: PrimFunc) -> PySource:
    """The Python source of ``func`` (a function ``_kernel`` taking one flat array per
    parameter); raises RecursionError on expressions too deep for Python's parser."""
    tr = _Translator(func)
    source = tr.translate()
    return PySource(source, tr.messages, tr.templates, tr.line_where)


# --- storage ---------------------------------------------------------------------------------
# dtype -> array.array typecode (None: a Python list of floats)
_TYPECODE = {"float32": "f", "float64": "d", "float16": None, "bfloat16": None, "int8": "b",
             "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
             "int64": "q", "uint64": "Q", "bool": "B"}
assert all(array(c).itemsize == np.dtype(d).itemsize for d, c in _TYPECODE.items() if c)


def to_flat(arr: np.ndarray, dtype: str):
    """``arr`` as the generated code's storage for ``dtype`` (a copy)."""
    native = np.ascontiguousarray(arr, dtype=np.dtype(dtype))
    code = _TYPECODE[dtype]
    if code is None:  # float16, bfloat16: no array.array type code, so a list of Python floats
        return native.astype(np.float64).ravel().tolist()
    return array(code, native.tobytes())


def from_flat(flat, dtype: str, shape) -> np.ndarray:
    """The generated code's storage back as a numpy array of ``shape``."""
    if isinstance(flat, list):
        return np.array(flat, dtype=dtype).reshape(shape)
    return np.frombuffer(flat, dtype=dtype).reshape(shape)


def _fresh(buffer: Buffer):
    code, poison = _TYPECODE[buffer.dtype], POISON[buffer.dtype]
    n = math.prod(buffer.shape)
    return [poison] * n if code is None else array(code, [poison]) * n


# --- translation to Python source -----------------------------------------------------------------
# Python operator precedence, so that the source has only the parentheses it needs (deep
# left-leaning sums would otherwise hit the parser's nesting limit).
_ATOM, _UNARY, _MUL, _ADD, _CMP, _NOT, _AND, _OR, _COND = 15, 12, 11, 10, 5, 4, 3, 2, 1
_PREC = {"+": _ADD, "-": _ADD, "*": _MUL, "//": _MUL, "%": _MUL, "==": _CMP, "!=": _CMP,
         "<": _CMP, "<=": _CMP, ">": _CMP, ">=": _CMP, "and": _AND, "or": _OR}
_MAX_LOOP_NEST = 18  # CPython refuses more than 20 statically nested blocks in one function


# the rounding a store or a cast to a narrow float type does, by its name in the generated code
_ROUND = {"float16": "_rf16", "bfloat16": "_rbf16", "float32": "_rf32"}


def _paren(code: tuple[str, int], need: int) -> str:
    text, prec = code
    return text if prec >= need else f"({text})"


def _wrap_code(text: str, prec: int, dtype: str) -> str:
    lo, hi = int_range(dtype)
    if lo == 0:
        return f"({_paren((text, prec), 9)} & {hi})"
    return f"((({_paren((text, prec), _ADD + 1)} + {-lo}) & {hi - lo}) - {-lo})"


class _Loop:
    """A loop being emitted: where its body starts, and the invariant lines hoisted into it."""

    def __init__(self, pos: int, indent: int):
        self.pos, self.indent = pos, indent
        self.lines: list[str] = []
        self.temps: dict[str, str] = {}


class _Translator(StmtFunctor, ExprFunctor):
    """Emit one Python function for a PrimFunc. ``stmt`` appends a statement's lines;
    ``expr`` translates an expression into ``(source, precedence)``."""

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
        # ASCII letters, digits and _, not starting with a digit: a Python identifier for
        # any IR name (``0v``, ``x²``, ``a b`` are valid IR names)
        clean = re.sub(r"[^A-Za-z0-9_]", "_", name).lstrip("_0123456789") or "v"
        return f"{clean}_{self.counter}"

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        where = self.where + (f", at `{self.stmt_text}`" if self.stmt_text else "")
        self.line_where.append(where)

    def body(self, stmt) -> None:
        """Emit ``stmt`` one level deeper (with ``pass`` if it produced no line)."""
        self.indent += 1
        n = len(self.lines)
        self.stmt(stmt)
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

    def unhandled_stmt(self, s) -> None:
        raise TIRError(f"the interpreter cannot run a {type(s).__name__} statement")

    def allocate(self, buffer: Buffer) -> tuple:
        self.templates.append(_fresh(buffer))
        name = self.fresh(buffer.name)
        self.emit(f"{name} = _T[{len(self.templates) - 1}][:]")
        return self.bind(buffer, name)

    def message(self, text: str) -> int:
        self.messages.append(text)
        return len(self.messages) - 1

    # --- statements -------------------------------------------------------------------------------
    def stmt_SeqStmt(self, s: SeqStmt) -> None:
        for stmt in s.stmts:
            self.stmt(stmt)

    def stmt_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, Const):
            self.stmt_text = str(s.value)
            self.emit(f"_ = {self.expr(s.value)[0]}")
            self.stmt_text = ""

    def stmt_BufferStore(self, s: BufferStore) -> None:
        buf, dtype = s.buffer, s.buffer.dtype
        self.stmt_text = f"{buf.name}[{', '.join(map(str, s.indices))}] = {s.value}"
        value = self.expr(s.value)
        if dtype in ("float16", "bfloat16"):  # array("f") rounds float32 stores itself
            text = f"{_ROUND[dtype]}({value[0]})"
        elif is_int(dtype):
            text = self.int_in_range(s.value, value, dtype)[0]
        else:
            text = value[0]
        self.emit(f"{self.buffer_name(buf)}[{self.flat_index(buf, s.indices)}] = {text}")
        self.stmt_text = ""

    def stmt_IfThenElse(self, s: IfThenElse) -> None:
        self.stmt_text = f"if {s.cond}"
        self.emit(f"if {self.expr(s.cond)[0]}:")
        self.stmt_text = ""
        self.body(s.then_case)
        if s.else_case is not None:
            self.emit("else:")
            self.body(s.else_case)

    def stmt_Allocate(self, s: Allocate) -> None:
        saved = self.allocate(s.buffer)
        self.stmt(s.body)
        self.unbind([saved])

    def stmt_For(self, s: For) -> None:
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

    def stmt_BlockRealize(self, s: BlockRealize) -> None:
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
                self.stmt(block.init)
        self.stmt(block.body)
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
    def unhandled_expr(self, e) -> tuple[str, int]:
        raise TIRError(f"the interpreter cannot evaluate a {type(e).__name__} expression")

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
        v = {"float16": round_f16, "bfloat16": round_bf16,
             "float32": round_f32}.get(dtype, float)(float(v))
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
        if is_int(e.a.dtype) and e.a.dtype not in ("int32", "int64") and op not in ("+", "-", "*"):
            # the reference's rule: narrow and unsigned operands wrap before they compare/divide
            a = self.int_in_range(e.a, a, e.a.dtype)
            b = self.int_in_range(e.b, b, e.b.dtype)
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

    def expr_Reinterpret(self, e: Reinterpret) -> tuple[str, int]:
        src = e.value.dtype
        return f"_reinterpret({self.expr(e.value)[0]}, {src!r}, {e.dtype!r})", _ATOM

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
            # C semantics of int -> int casts: the source value, wrapped to the target
            if bits(dst) <= bits(src):
                return self.int_in_range(e.value, code, dst)
            code = self.int_in_range(e.value, code, src)
            if is_unsigned(dst) and not is_unsigned(src):  # int8 -1 -> uint32 4294967295
                return _wrap_code(code[0], code[1], dst), _ATOM
            return code
        if is_int(src):  # int -> float: the source value as its own dtype wraps it
            code = (f"float({self.int_in_range(e.value, code, src)[0]})", _ATOM)
        if dst == "float32" and src not in ("float16", "bfloat16"):
            return f"_rf32({code[0]})", _ATOM
        if dst in _ROUND and dst != "float32":
            return f"{_ROUND[dst]}({code[0]})", _ATOM
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

