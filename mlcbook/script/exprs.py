"""Expressions of the script dialect, and the names and constants they are built from.

:class:`ExprParser` turns the AST of an expression (``A[vi, vk] * T.float32(2)``), a buffer
region (``A[vi, 0:128]``) or a Python constant (a shape, a dtype, an annotation dict) into
IR or a value, resolving names through lexical scopes of loop variables, iteration
variables and buffers, then the Python constants of the function's globals and closure.
:class:`Source` turns an AST position into a :class:`~mlcbook.errors.ScriptError` that
points at the line and column of the real file.

A bare number takes the dtype of the expression it meets (``x + 1`` with ``x`` int64 is
``x + T.int64(1)``); ``-5`` is the constant -5 while ``-T.int32(5)`` negates 5.
"""

from __future__ import annotations

import ast
import difflib
import numbers
import textwrap
import types
from dataclasses import dataclass

from ..errors import ScriptError, TIRError
from ..tir.expr import (BIT_FUNCS, DTYPES, MATH_FUNCS, Binary, Buffer, BufferLoad, Call, Cast,
                        Const, PrimExpr, Reinterpret, Select, TensorCall, Unary, Var, as_expr,
                        check_dtype, is_float)
from ..tir.stmt import BufferRegion, Range
from . import dialect
from ..tir.regions import same_expr

#: how deeply an expression of a script may nest (``a + b + c`` nests 2 deep); every stage
#: after the parser walks expressions recursively, and deeper ones exhaust Python's stack
MAX_EXPR_DEPTH = 256

BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%"}
_CMPOPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">",
           ast.GtE: ">="}
_CONST_DTYPES = DTYPES


@dataclass
class Source:
    """Script text and where it came from, to turn an AST position into a ScriptError."""

    text: str              # dedented, what ast parses
    original: list[str]    # the lines as they are in the file
    filename: str | None
    first_line: int        # line number of the text's first line in the file
    indent: int            # columns removed by dedenting

    @staticmethod
    def from_text(text: str, filename, first_line: int) -> "Source":
        dedented = textwrap.dedent(text)
        indent = 0
        for orig, new in zip(_lines(text), _lines(dedented)):
            if new.strip():
                indent = len(orig) - len(new)
                break
        return Source(dedented, _lines(text), filename, first_line, indent)

    def parse(self) -> ast.Module:
        try:
            return ast.parse(self.text)
        except SyntaxError as e:
            col = (e.offset or 1) - 1
            raise self._error(f"invalid Python syntax: {e.msg}", e.lineno, col) from None

    def error(self, node, message: str) -> ScriptError:
        lineno = getattr(node, "lineno", None)
        if lineno is None:
            return self._error(message, None, 0)
        line = _lines(self.text)[lineno - 1]
        col = len(line.encode()[: node.col_offset].decode("utf-8", "replace"))
        return self._error(message, lineno, col)

    def _error(self, message: str, lineno, col) -> ScriptError:
        if self.filename:
            message += f'\n  in file "{self.filename}"'
        if lineno is None:
            return ScriptError(message)
        shown = self.original[lineno - 1] if lineno <= len(self.original) else None
        return ScriptError(message, self.first_line + lineno - 1, col + self.indent, shown)


def _lines(text: str) -> list[str]:
    # the lines as Python's tokenizer sees them (str.splitlines also splits at \x85, \u2028...)
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _is_dialect(obj) -> bool:
    """Whether ``obj`` is a module holding the dialect's names (``T``)."""
    return isinstance(obj, types.ModuleType) and getattr(obj, "DIALECT", False) is True


class ExprParser:
    """Scopes of names, and the expression half of the parser."""

    def __init__(self, src: Source, env):
        self.src = src
        self.env = env                    # name -> Python value (globals, closure), or KeyError
        self.scopes: list[dict] = [{}]
        self.lits: set[int] = set()       # ids of constants written as bare numbers
        self.keep: list = []

    def err(self, node, message: str) -> ScriptError:
        return self.src.error(node, message)

    # --- names -----------------------------------------------------------------------------
    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def define(self, name: str, obj) -> None:
        self.scopes[-1][name] = obj

    def local(self, name: str):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def t_member(self, node) -> str | None:
        """``"axis.remap"`` for the node ``T.axis.remap``; None if it is not a T name."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or self.local(node.id) is not None:
            return None
        try:
            obj = self.env(node.id)
        except KeyError:
            return None
        parts.reverse()
        k = 0
        while not _is_dialect(obj) and k < len(parts) and isinstance(obj, types.ModuleType):
            obj = getattr(obj, parts[k], None)
            k += 1
        return ".".join(parts[k:]) if _is_dialect(obj) else None

    def unknown_t(self, node, name: str, what: str = "") -> ScriptError:
        if name in dialect.NAMES:
            return self.err(node, f"T.{name} cannot be used here{what}")
        close = difflib.get_close_matches(name, dialect.NAMES, n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join('T.' + c for c in close)}?" if close else
                f"known names: {', '.join('T.' + n for n in dialect.NAMES)}")
        return self.err(node, f"unknown name T.{name}; {hint}")

    def py_value(self, node, what: str):
        """A Python constant: literal, negated number, tuple/list/dict of them, or a global."""
        if isinstance(node, ast.Constant):
            return node.value
        if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)):
            v = self.py_value(node.operand, what)
            if isinstance(v, numbers.Number) and not isinstance(v, bool):
                return -v
        if isinstance(node, (ast.Tuple, ast.List)):
            vals = [self.py_value(e, what) for e in node.elts]
            return tuple(vals) if isinstance(node, ast.Tuple) else vals
        if isinstance(node, ast.Dict) and None not in node.keys:
            return {self.py_value(k, what): self.py_value(v, what)
                    for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.Name) and self.local(node.id) is None:
            v = self._global(node)
            if v is not None:
                return v
        raise self.err(node, f"{what} must be a constant written in the script")

    def _global(self, node: ast.Name):
        try:
            v = self.env(node.id)
        except KeyError:
            return None
        if isinstance(v, (str, bool)):
            return v
        if isinstance(v, numbers.Integral):
            return int(v)
        if isinstance(v, numbers.Real):
            return float(v)
        raise self.err(node, f"{node.id!r} is a {type(v).__name__}; a script can use only "
                             "int, float and str constants from Python")

    def args(self, call: ast.Call, name: str, spec: list[str], required: int) -> dict:
        out = {}
        if len(call.args) > len(spec):
            raise self.err(call, f"T.{name} takes at most {len(spec)} positional argument(s) "
                                 f"({', '.join(spec)}), got {len(call.args)}")
        for p, a in zip(spec, call.args):
            if isinstance(a, ast.Starred):
                raise self.err(a, f"T.{name}: *arguments are not supported")
            out[p] = a
        for kw in call.keywords:
            if kw.arg not in spec:
                raise self.err(kw, f"T.{name} has no argument {kw.arg!r}; it takes "
                                   f"{', '.join(spec)}")
            if kw.arg in out:
                raise self.err(kw, f"T.{name}: argument {kw.arg!r} is given twice")
            out[kw.arg] = kw.value
        missing = [p for p in spec[:required] if p not in out]
        if missing:
            raise self.err(call, f"T.{name} needs the argument(s) {', '.join(missing)}")
        return out

    def shape(self, node) -> tuple:
        v = self.py_value(node, "a buffer shape")
        shape = v if isinstance(v, (tuple, list)) else (v,)
        for s in shape:
            if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
                raise self.err(node, f"buffer shape {v!r} must hold positive ints")
        return tuple(shape)

    def dtype(self, node, default: str | None = None) -> str:
        if node is None:
            return default
        v = self.py_value(node, "a dtype")
        try:
            return check_dtype(v)
        except TIRError as e:
            raise self.err(node, e.message) from None

    def buffer_args(self, call, name) -> tuple:
        a = self.args(call, name, ["shape", "dtype", "scope"], 1)
        scope = self.py_value(a["scope"], "a scope") if "scope" in a else "global"
        if not isinstance(scope, str):
            raise self.err(a["scope"], f"T.{name}: scope is a string such as \"local\"")
        return self.shape(a["shape"]), self.dtype(a.get("dtype"), "float32"), scope

    # --- expressions -----------------------------------------------------------------------
    def expr(self, node) -> PrimExpr:
        depth = getattr(self, "_depth", 0)
        if depth >= MAX_EXPR_DEPTH:
            raise self.err(node, f"this expression nests more than {MAX_EXPR_DEPTH} operations "
                           "deep (a sum of that many terms is as deep); the compiler walks "
                           "expressions recursively and stops at that depth. Instead: split it "
                           "into partial sums in a loop or in several statements")
        self._depth = depth + 1
        try:
            return self._expr(node)
        except TIRError as e:
            raise self.err(node, e.message) from None
        finally:
            self._depth = depth

    def lit(self, value) -> Const:
        c = as_expr(value)
        self.lits.add(id(c))
        self.keep.append(c)
        return c

    def retype(self, e: PrimExpr, dtype: str) -> PrimExpr:
        """A bare number takes the dtype of the expression it meets."""
        if id(e) in self.lits and e.dtype != dtype and e.dtype != "bool" and dtype != "bool":
            return as_expr(e.value, dtype)
        return e

    def coerce(self, a: PrimExpr, b: PrimExpr) -> tuple[PrimExpr, PrimExpr]:
        if a.dtype != b.dtype:
            if id(a) in self.lits and (id(b) not in self.lits or is_float(b.dtype)):
                a = self.retype(a, b.dtype)
            elif id(b) in self.lits:
                b = self.retype(b, a.dtype)
        return a, b

    def binary(self, op: str, a: PrimExpr, b: PrimExpr) -> Binary:
        return Binary(op, *self.coerce(a, b))

    def _expr(self, node) -> PrimExpr:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return Const(v, "bool")
            if isinstance(v, (int, float)):
                return self.lit(v)
            raise self.err(node, f"{v!r} is not a number; expressions hold numbers, variables "
                                 "and buffer loads")
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.err(node, f"operator {type(node.op).__name__} is not in the script "
                                     "dialect; use + - * / // % and T.max/T.min/T.pow")
            return self.binary(op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            a = self.expr(node.operand)
            if isinstance(node.op, ast.USub):
                # `-5` is the constant -5, but `--5` negates the constant -5
                if id(a) in self.lits and isinstance(node.operand, (ast.Constant, ast.Name)):
                    return self.lit(-a.value)
                return Unary("-", a)
            if isinstance(node.op, ast.Not):
                return Unary("not", a)
            if isinstance(node.op, ast.UAdd):
                return a
            raise self.err(node, "use `not` for logical negation; `~` is not in the dialect")
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            out = self.expr(node.values[0])
            for v in node.values[1:]:
                out = Binary(op, out, self.expr(v))
            return out
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.err(node, "chained comparisons like a < b < c are not supported; "
                                     "write (a < b) and (b < c)")
            op = _CMPOPS.get(type(node.ops[0]))
            if op is None:
                raise self.err(node, "only == != < <= > >= compare values in the script dialect")
            return self.binary(op, self.expr(node.left), self.expr(node.comparators[0]))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            buf = self.buffer(node.value)
            idx = [self.expr(i) for i in self.index_nodes(node.slice, loads=True)]
            return BufferLoad(buf, tuple(idx))
        if isinstance(node, ast.IfExp):
            raise self.err(node, "use T.select(cond, a, b) instead of `a if cond else b`")
        raise self.err(node, f"{type(node).__name__} is not an expression of the script dialect")

    def _name(self, node: ast.Name) -> PrimExpr:
        obj = self.local(node.id)
        if isinstance(obj, Var):
            return obj
        if isinstance(obj, Buffer):
            raise self.err(node, f"buffer {node.id!r} is used as a value; load an element, "
                                 f"e.g. {node.id}[i]")
        v = self._global(node)
        if v is None:
            visible = [n for s in self.scopes for n in s]
            close = difflib.get_close_matches(node.id, visible, n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise self.err(node, f"unknown name {node.id!r}: it is not a loop variable, block "
                                 f"iteration variable, buffer or Python constant{hint}")
        if isinstance(v, str):
            raise self.err(node, f"{node.id!r} is the string {v!r}, not a number")
        return Const(v, "bool") if isinstance(v, bool) else self.lit(v)

    def buffer(self, node) -> Buffer:
        obj = self.local(node.id) if isinstance(node, ast.Name) else None
        if not isinstance(obj, Buffer):
            raise self.err(node, "only a buffer (a parameter or an allocation) can be indexed")
        return obj

    def index_nodes(self, node, loads: bool) -> list:
        elts = node.elts if isinstance(node, ast.Tuple) else [node]
        if loads:
            for e in elts:
                if isinstance(e, ast.Slice):
                    raise self.err(e, "a slice selects a region and belongs in "
                                      "T.reads/T.writes; a load or store takes one index per "
                                      "dimension")
        return elts

    def _call(self, node: ast.Call) -> PrimExpr:
        name = self.t_member(node.func)
        if name is None:
            raise self.err(node, "only T.<name>(...) calls appear in expressions (T.max, "
                                 "T.exp, T.Cast, T.select, T.float32, ...)")
        if name in _CONST_DTYPES:
            arg = self.args(node, name, ["value"], 1)["value"]
            constant = isinstance(arg, (ast.Constant, ast.UnaryOp)) or (
                isinstance(arg, ast.Name) and self.local(arg.id) is None)
            v = self.py_value(arg, f"the argument of T.{name}") if constant else None
            if isinstance(v, str) and v in ("inf", "-inf", "nan"):
                v = float(v)
            if not isinstance(v, (int, float)):
                raise self.err(node, f"T.{name} takes a number (or \"inf\", \"-inf\", \"nan\"); "
                                     f"to convert an expression use T.Cast(\"{name}\", x)")
            return Const(v, name)
        if name in ("max", "min"):
            a = self.args(node, name, ["a", "b"], 2)
            return self.binary(name, self.expr(a["a"]), self.expr(a["b"]))
        if name in MATH_FUNCS or name in BIT_FUNCS:
            spec = ["x", "y"][: MATH_FUNCS.get(name, BIT_FUNCS.get(name))]
            a = self.args(node, name, spec, len(spec))
            args = [self.expr(a[p]) for p in spec]
            if len(args) == 2:
                args = list(self.coerce(*args))
            return Call(name, tuple(args))
        if name in ("select", "if_then_else"):
            a = self.args(node, name, ["cond", "true_value", "false_value"], 3)
            t, f = self.coerce(self.expr(a["true_value"]), self.expr(a["false_value"]))
            return Select(self.expr(a["cond"]), t, f)
        if name == "Cast":
            a = self.args(node, name, ["dtype", "value"], 2)
            return Cast(self.dtype(a["dtype"]), self.expr(a["value"]))
        if name == "reinterpret":
            a = self.args(node, name, ["dtype", "value"], 2)
            return Reinterpret(self.dtype(a["dtype"]), self.expr(a["value"]))
        if name == "tensor_call":
            return self.tensor_call(node)
        raise self.unknown_t(node.func, name, " as an expression")

    def tensor_call(self, node: ast.Call) -> TensorCall:
        """``T.tensor_call("x86.dot_u8i8.8x4", A[0], B[0, 0], C[0])``: an op name, then one
        load per tile, at the tile's origin (what an intrinsic's ``impl`` holds)."""
        if node.keywords or not node.args:
            raise self.err(node, "T.tensor_call takes the op's name, then one buffer load per "
                                 "tile, all positional: T.tensor_call(\"op\", A[0], C[0])")
        op = node.args[0]
        if not isinstance(op, ast.Constant) or not isinstance(op.value, str):
            raise self.err(op, "the first argument of T.tensor_call is the op's name, a string")
        loads = [self.expr(a) for a in node.args[1:]]
        for a, e in zip(node.args[1:], loads):
            if not isinstance(e, BufferLoad):
                raise self.err(a, "each tile of T.tensor_call is a buffer load at the tile's "
                                  "origin, e.g. B[0, 0]")
        return TensorCall(op.value, tuple(loads))

    def regions(self, call: ast.Call, name: str) -> tuple:
        if call.keywords:
            raise self.err(call.keywords[0], f"T.{name} takes buffer regions, no keywords")
        return tuple(self.region(a) for a in call.args)

    def region(self, node) -> BufferRegion:
        if isinstance(node, ast.Name):  # a whole buffer
            return BufferRegion.full(self.buffer(node))
        if not isinstance(node, ast.Subscript):
            raise self.err(node, "a region is a buffer indexed by points and slices, "
                                 "e.g. A[vi, 0:128]")
        buf = self.buffer(node.value)
        dims = self.index_nodes(node.slice, loads=False)
        if len(dims) != buf.ndim:
            raise self.err(node, f"buffer {buf.name!r} has {buf.ndim} dimension(s) but the "
                                 f"region gives {len(dims)}")
        ranges = []
        for d, size in zip(dims, buf.shape):
            if not isinstance(d, ast.Slice):
                idx = self.expr(d)
                ranges.append(Range(idx, Const(1, idx.dtype)))
                continue
            if d.step is not None:
                raise self.err(d.step, "a region slice has no step")
            lo = self.expr(d.lower) if d.lower is not None else Const(0, "int32")
            ranges.append(Range(lo, self._extent(lo, d.upper, size)))
        return BufferRegion(buf, tuple(ranges))

    def _extent(self, lo: PrimExpr, upper, size: int) -> PrimExpr:
        # read back what the printer writes: `0:n`, `2:5`, `lo:lo + extent` (whose sum need
        # not type-check: the extent's dtype may differ from the min's)
        if isinstance(lo, Const) and lo.value == 0:
            hi = self.expr(upper) if upper is not None else Const(size, "int32")
            return Const(hi.value, hi.dtype) if isinstance(hi, Const) else hi
        if isinstance(upper, ast.BinOp) and isinstance(upper.op, ast.Add):
            if same_expr(self.expr(upper.left), lo):
                return self.expr(upper.right)
        hi = self.expr(upper) if upper is not None else Const(size, "int32")
        if isinstance(lo, Const) and isinstance(hi, Const):
            return Const(hi.value - lo.value, hi.dtype)
        try:
            return self.binary("-", hi, lo)
        except TIRError as e:
            raise self.err(upper, e.message) from None

