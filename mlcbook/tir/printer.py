"""The printer: loop IR as Python-syntax text in mlcbook's script dialect.

``print(func)`` shows a PrimFunc the way ``mb.script.parse`` reads it back, exactly::

    @T.prim_func
    def mm(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"), C: ...):
        for i, j, k in T.grid(128, 128, 128):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(C[vi, vj])
                with T.init():
                    C[vi, vj] = T.float32(0.0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

Conventions, each chosen so that the text determines the IR:

- int32 constants are bare (``4``, ``-1``); every other constant names its dtype
  (``T.int64(5)``, ``T.float32(0.5)``, ``T.float32("inf")``); floats use ``repr``.
- A negated constant ``-(5)`` prints as ``-T.int32(5)``, because ``-5`` means the constant -5.
- The root block is not printed: its allocations become ``Y = T.alloc_buffer(...)`` lines at
  the top. A function whose body is anything else says so: ``@T.prim_func(root=False)``.
  ``num_outputs`` other than 1 is a decorator argument too: ``@T.prim_func(num_outputs=2)``.
- Serial loops without annotations print as ``range(n)``; perfectly nested ones collapse
  into ``T.grid(n, m)``. A loop whose variable's dtype differs from its extent's gets
  ``dtype=`` (the parser otherwise gives the variable the extent's dtype).
- A block always shows ``T.reads``/``T.writes``, even empty: the text states the IR's facts.
- ``Allocate`` prints as ``with T.allocate(shape, dtype) as name:`` around its body.
- Nested or one-element ``SeqStmt`` nodes print flat; the parser rebuilds them with ``seq``.
- Names are made valid and unique among the names visible at their definition (``i_1``).
- An :class:`IRModule` prints as ``@T.ir_module class Module:`` with one method per function,
  named by its key in the module.
"""

from __future__ import annotations

import json
import keyword
import math
import unicodedata

import numpy as np

from ..optional import available, require
from ..printing import register
from .functor import post_order_visit
from .expr import (Binary, Buffer, BufferLoad, Call, Cast, Const, PrimExpr, Reinterpret, Select,
                   Unary, Var, CMP_OPS, TensorCall)
from .function import IRModule, PrimFunc
from .stmt import (Allocate, Block, BlockRealize, BufferRegion, BufferStore, Evaluate, For,
                   IfThenElse, Range, SeqStmt, Stmt)

__all__ = ["expr_to_str", "stmt_to_str", "func_to_str", "module_to_str", "to_html"]

# Python's operator precedences, lowest first; an operand printed below the precedence its
# position needs gets parentheses.
_PREC = {"or": 1, "and": 2, "not": 3, **{op: 4 for op in CMP_OPS},
         "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10}
_NEG = 11
_ATOM = 13

# names the printed text needs for itself
_RESERVED = frozenset(keyword.kwlist) | {"T", "range", "True", "False", "None"}
_LOOP_FUNCS = {"serial": "serial", "parallel": "parallel", "vectorized": "vectorized",
               "unrolled": "unroll"}
_INDENT = "    "


def expr_to_str(e: PrimExpr) -> str:
    """``i * 4 + j``: an expression in script syntax, variables by their own names."""
    return _Printer(rename=False).expr(e)


def stmt_to_str(s: Stmt) -> str:
    """A statement in script syntax (variables it does not define keep their own names)."""
    p = _Printer(rename=True)
    p.stmt(s, 0)
    return "\n".join(p.lines)


def part_to_str(node) -> str:
    """A region ``A[vi, 0:4]``, a range ``0:4`` or an iteration variable ``vk: reduce(0:16)``."""
    p = _Printer(rename=False)
    if isinstance(node, BufferRegion):
        return p.region(node)
    if isinstance(node, Range):
        return p._range(node)
    return f"{p.expr(node.var)}: {node.kind}(0:{p.expr(node.extent)})"


def func_to_str(f: PrimFunc, name: str | None = None) -> str:
    """The script text of a PrimFunc (what ``print(f)`` shows), optionally under another name."""
    p = _Printer(rename=True)
    p.func(f, name or f.name, 0)
    return "\n".join(p.lines)


def module_to_str(mod: IRModule) -> str:
    """The script text of a module: ``@T.ir_module class Module:`` with one method per function."""
    lines = ["@T.ir_module", "class Module:"]
    if not mod.functions:
        lines.append(_INDENT + "pass")
    for n, (key, func) in enumerate(mod.items()):
        if n:
            lines.append("")
        if isinstance(func, PrimFunc):
            p = _Printer(rename=True)
            p.func(func, key, 1)
            lines.extend(p.lines)
        else:  # a graph-level function prints itself; the script parser does not read these
            text = func.script() if hasattr(func, "script") else repr(func)
            lines.extend(_INDENT + line for line in text.splitlines())
    return "\n".join(lines)


def to_html(text: str) -> str:
    """Script text as syntax-highlighted HTML (inline styles, so it renders in any notebook)."""
    if not available("pygments"):  # the course extra has it; plain text reads fine too
        import html
        return f"<pre>{html.escape(text)}</pre>"
    pygments = require("pygments", "syntax highlighting")
    require("pygments.formatters", "syntax highlighting")
    require("pygments.lexers", "syntax highlighting")
    return pygments.highlight(text, pygments.lexers.PythonLexer(),
                              pygments.formatters.HtmlFormatter(noclasses=True))


def _sanitize(name: str) -> str:
    # Python reads identifiers in NFKC form, so print them that way
    name = unicodedata.normalize("NFKC", name)
    name = "".join(c if ("_" + c).isidentifier() else "_" for c in name)
    if not name.isidentifier():
        name = "v_" + name
    return name


def _str_lit(s: str) -> str:
    # readable non-ASCII, but escapes for anything invisible (line separators included)
    text = json.dumps(s, ensure_ascii=False)
    return "".join(c if c.isprintable() else
                   (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
                   for c in text)


def _py_lit(v) -> str:
    """Python literal text of an annotation value (``ast.literal_eval`` reads it back)."""
    if isinstance(v, str):
        return _str_lit(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_py_lit(k)}: {_py_lit(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple):
        inner = ", ".join(_py_lit(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_py_lit(x) for x in v) + "]"
    return repr(v)


def _dict_lit(pairs) -> str:
    return "{" + ", ".join(f"{_str_lit(k)}: {_py_lit(v)}" for k, v in pairs) + "}"


def _shape(shape) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


def _buffer_type(b: Buffer) -> str:
    scope = "" if b.scope == "global" else f", scope={_str_lit(b.scope)}"
    return f"{_shape(b.shape)}, {_str_lit(b.dtype)}{scope}"


def _is_true(e: PrimExpr) -> bool:
    return isinstance(e, Const) and e.dtype == "bool" and e.value is True


def _is_plain_root(body: Stmt) -> bool:
    """A root block the text can leave implicit: nothing but allocations on it."""
    if not isinstance(body, BlockRealize):
        return False
    b = body.block
    return (b.name == "root" and not b.iter_vars and not body.iter_values
            and _is_true(body.predicate) and not b.reads and not b.writes and b.init is None
            and not b.annotations)


def _is_plain_loop(s) -> bool:
    return (isinstance(s, For) and s.kind == "serial" and not s.annotations
            and s.loop_var.dtype == s.extent.dtype)


def _uses_any(e: PrimExpr, var_ids: set) -> bool:
    found = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) and id(n) in var_ids
                     else None)
    return bool(found)


class _Printer:
    def __init__(self, rename: bool):
        self.rename = rename
        self.names: dict[int, str] = {}
        self.keep: list = []              # keeps named objects alive so their ids stay unique
        self.scopes: list[list[str]] = [[]]
        self.in_use: set[str] = set()
        self.loops: dict[int, For] = {}   # enclosing loops by id of their variable
        self.lines: list[str] = []

    # --- names ---------------------------------------------------------------------------
    def push(self) -> None:
        self.scopes.append([])

    def pop(self) -> None:
        for n in self.scopes.pop():
            self.in_use.discard(n)

    def define(self, obj) -> str:
        base = _sanitize(obj.name)
        name, k = base, 0
        while name in self.in_use or name in _RESERVED:
            k += 1
            name = f"{base}_{k}"
        self.in_use.add(name)
        self.scopes[-1].append(name)
        self.names[id(obj)] = name
        self.keep.append(obj)
        return name

    def name(self, obj) -> str:
        if not self.rename:
            return obj.name
        return self.names.get(id(obj)) or _sanitize(obj.name)

    # --- expressions ---------------------------------------------------------------------
    def expr(self, e: PrimExpr) -> str:
        return self._expr(e)[0]

    def _sub(self, e: PrimExpr, need: int) -> str:
        text, prec = self._expr(e)
        return text if prec >= need else f"({text})"

    def _expr(self, e: PrimExpr) -> tuple[str, int]:
        if isinstance(e, Var):
            return self.name(e), _ATOM
        if isinstance(e, Const):
            return _const(e)
        if isinstance(e, Binary):
            if e.op in ("min", "max"):
                return f"T.{e.op}({self.expr(e.a)}, {self.expr(e.b)})", _ATOM
            p = _PREC[e.op]
            # comparisons do not chain in the IR, so a comparison operand gets parentheses
            left = self._sub(e.a, p + 1 if e.op in CMP_OPS else p)
            return f"{left} {e.op} {self._sub(e.b, p + 1)}", p
        if isinstance(e, Unary):
            if e.op == "not":
                return f"not {self._sub(e.a, _PREC['not'])}", _PREC["not"]
            a = e.a
            if isinstance(a, Const) and a.dtype == "int32" and a.value >= 0:
                return f"-T.int32({a.value})", _NEG
            return f"-{self._sub(a, _NEG)}", _NEG
        if isinstance(e, Cast):
            return f"T.Cast({_str_lit(e.dtype)}, {self.expr(e.value)})", _ATOM
        if isinstance(e, Reinterpret):
            return f"T.reinterpret({_str_lit(e.dtype)}, {self.expr(e.value)})", _ATOM
        if isinstance(e, Select):
            return (f"T.select({self.expr(e.cond)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})"), _ATOM
        if isinstance(e, Call):
            return f"T.{e.name}({', '.join(self.expr(a) for a in e.args)})", _ATOM
        if isinstance(e, TensorCall):
            args = ", ".join([_str_lit(e.op)] + [self.expr(a) for a in e.args])
            return f"T.tensor_call({args})", _ATOM
        if isinstance(e, BufferLoad):
            return f"{self.name(e.buffer)}[{self._indices(e.indices)}]", _ATOM
        return f"<{type(e).__name__}>", _ATOM

    def _indices(self, indices) -> str:
        return ", ".join(self.expr(i) for i in indices) if indices else "()"

    def region(self, r: BufferRegion) -> str:
        if not r.region:
            return f"{self.name(r.buffer)}[()]"
        return f"{self.name(r.buffer)}[{', '.join(self._range(x) for x in r.region)}]"

    def _range(self, r: Range) -> str:
        lo, ext = r.min, r.extent
        if isinstance(ext, Const) and ext.value == 1 and ext.dtype == lo.dtype:
            return self.expr(lo)  # a point
        if isinstance(lo, Const) and isinstance(ext, Const) and _fits(lo.value + ext.value,
                                                                      ext.dtype):
            return f"{self.expr(lo)}:{self.expr(Const(lo.value + ext.value, ext.dtype))}"
        if isinstance(lo, Const) and lo.value == 0:
            return f"{self.expr(lo)}:{self.expr(ext)}"
        return f"{self.expr(lo)}:{self.expr(lo)} + {self._sub(ext, _PREC['+'] + 1)}"

    # --- statements ----------------------------------------------------------------------
    def emit(self, ind: int, text: str) -> None:
        self.lines.append(_INDENT * ind + text)

    def body(self, s: Stmt, ind: int) -> None:
        self.push()
        self.stmt(s, ind)
        self.pop()

    def stmt(self, s: Stmt, ind: int) -> None:
        if isinstance(s, SeqStmt):
            if not s.stmts:
                self.emit(ind, "pass")
            for x in s.stmts:
                self.stmt(x, ind)
        elif isinstance(s, BufferStore):
            self.emit(ind, f"{self.name(s.buffer)}[{self._indices(s.indices)}] = "
                           f"{self.expr(s.value)}")
        elif isinstance(s, For):
            self._for(s, ind)
        elif isinstance(s, BlockRealize):
            self._block(s.block, s.iter_values, s.predicate, ind)
        elif isinstance(s, Block):  # malformed (no realize) but still shown
            self._block(s, (), None, ind)
        elif isinstance(s, IfThenElse):
            self._if(s, ind, "if")
        elif isinstance(s, Allocate):
            b = s.buffer
            shape = _buffer_type(b)
            self.push()
            self.emit(ind, f"with T.allocate({shape}) as {self.define(b)}:")
            self.body(s.body, ind + 1)
            self.pop()
        elif isinstance(s, Evaluate):
            self.emit(ind, f"T.evaluate({self.expr(s.value)})")
        else:
            self.emit(ind, f"<{type(s).__name__}>")

    def _if(self, s: IfThenElse, ind: int, word: str) -> None:
        self.emit(ind, f"{word} {self.expr(s.cond)}:")
        self.body(s.then_case, ind + 1)
        if isinstance(s.else_case, IfThenElse):
            self._if(s.else_case, ind, "elif")
        elif s.else_case is not None:
            self.emit(ind, "else:")
            self.body(s.else_case, ind + 1)

    def _for(self, s: For, ind: int) -> None:
        loops = [s]
        if _is_plain_loop(s):
            while _is_plain_loop(loops[-1].body) and not _uses_any(
                    loops[-1].body.extent, {id(lp.loop_var) for lp in loops}):
                loops.append(loops[-1].body)
        extents = [self.expr(lp.extent) for lp in loops]
        self.push()
        names = [self.define(lp.loop_var) for lp in loops]
        if len(loops) > 1:
            head = f"for {', '.join(names)} in T.grid({', '.join(extents)}):"
        elif _is_plain_loop(s):
            head = f"for {names[0]} in range({extents[0]}):"
        else:
            args = [extents[0]]
            if s.annotations:
                args.append(f"annotations={_dict_lit(s.annotations)}")
            if s.loop_var.dtype != s.extent.dtype:
                args.append(f"dtype={_str_lit(s.loop_var.dtype)}")
            head = f"for {names[0]} in T.{_LOOP_FUNCS[s.kind]}({', '.join(args)}):"
        self.emit(ind, head)
        for lp in loops:
            self.loops[id(lp.loop_var)] = lp
        self.body(loops[-1].body, ind + 1)
        for lp in loops:
            self.loops.pop(id(lp.loop_var), None)
        self.pop()

    def _remappable(self, block: Block, values) -> bool:
        if len(block.iter_vars) < 2:
            return False
        for iv, v in zip(block.iter_vars, values):
            loop = self.loops.get(id(v)) if isinstance(v, Var) else None
            if (loop is None or not isinstance(iv.extent, Const)
                    or not isinstance(loop.extent, Const) or iv.extent.value != loop.extent.value
                    or iv.extent.dtype != loop.extent.dtype or iv.var.dtype != v.dtype):
                return False
        return True

    def _block(self, block: Block, values, predicate, ind: int) -> None:
        self.emit(ind, f"with T.block({_str_lit(block.name)}):")
        ind += 1
        # bindings and extents are evaluated outside the block, before its names exist
        remap = self._remappable(block, values)
        value_text = [self.expr(v) for v in values]
        extent_text = [self.expr(iv.extent) for iv in block.iter_vars]
        pred_text = None if predicate is None or _is_true(predicate) else self.expr(predicate)
        self.push()
        iv_names = [self.define(iv.var) for iv in block.iter_vars]
        if remap:
            kinds = "".join("S" if iv.kind == "spatial" else "R" for iv in block.iter_vars)
            self.emit(ind, f"{', '.join(iv_names)} = T.axis.remap({_str_lit(kinds)}, "
                           f"[{', '.join(value_text)}])")
        else:
            for iv, name, ext, val in zip(block.iter_vars, iv_names, extent_text, value_text):
                dtype = "" if iv.var.dtype == iv.extent.dtype else f", dtype={_str_lit(iv.var.dtype)}"
                self.emit(ind, f"{name} = T.axis.{iv.kind}({ext}, {val}{dtype})")
        if pred_text is not None:
            self.emit(ind, f"T.where({pred_text})")
        # allocations are named before the regions, which may mention them
        alloc_names = [self.define(b) for b in block.alloc_buffers]
        self.emit(ind, f"T.reads({', '.join(self.region(r) for r in block.reads)})")
        self.emit(ind, f"T.writes({', '.join(self.region(r) for r in block.writes)})")
        if block.annotations:
            self.emit(ind, f"T.block_attr({_dict_lit(block.annotations)})")
        for b, name in zip(block.alloc_buffers, alloc_names):
            self.emit(ind, f"{name} = T.alloc_buffer({_buffer_type(b)})")
        if block.init is not None:
            self.emit(ind, "with T.init():")
            self.body(block.init, ind + 1)
        self.stmt(block.body, ind)
        self.pop()

    # --- functions -----------------------------------------------------------------------
    def func(self, f: PrimFunc, name: str, ind: int) -> None:
        plain_root = _is_plain_root(f.body)
        kwargs = []
        if f.num_outputs != 1:
            kwargs.append(f"num_outputs={f.num_outputs}")
        if not plain_root:
            kwargs.append("root=False")
        self.emit(ind, "@T.prim_func" + (f"({', '.join(kwargs)})" if kwargs else ""))
        params = [f"{self.define(b)}: T.Buffer({_buffer_type(b)})" for b in f.params]
        name = _sanitize(name) + ("_1" if keyword.iskeyword(_sanitize(name)) else "")
        head = f"def {name}({', '.join(params)}):"
        if len(_INDENT * ind + head) <= 100:
            self.emit(ind, head)
        else:
            self.emit(ind, f"def {name}(")
            for p in params:
                self.emit(ind + 1, p + ",")
            self.emit(ind, "):")
        ind += 1
        if f.attrs:
            self.emit(ind, f"T.func_attr({_dict_lit(f.attrs)})")
        body = f.body
        if plain_root:
            for b in body.block.alloc_buffers:
                self.emit(ind, f"{self.define(b)} = T.alloc_buffer({_buffer_type(b)})")
            body = body.block.body
        self.stmt(body, ind)


def _const(c: Const) -> tuple[str, int]:
    v = c.value
    if c.dtype == "bool":
        return ("True" if v else "False"), _ATOM
    if c.dtype == "int32":
        return str(v), (_NEG if v < 0 else _ATOM)
    if isinstance(v, float):
        if math.isnan(v):
            return f'T.{c.dtype}("nan")', _ATOM
        if math.isinf(v):
            return f'T.{c.dtype}("{"inf" if v > 0 else "-inf"}")', _ATOM
        return f"T.{c.dtype}({_float_text(v)})", _ATOM
    return f"T.{c.dtype}({v})", _ATOM


def _float_text(v: float) -> str:
    # integral values print as ints (T.float32(0)); everything else by repr, which reads back
    # to the same double
    if v.is_integer() and abs(v) < 1e15 and (v != 0 or math.copysign(1.0, v) > 0):
        return str(int(v))
    return repr(v)


def _fits(value: int, dtype: str) -> bool:
    info = np.iinfo(dtype)
    return info.min <= value <= info.max


register("tir.expr", expr_to_str)
register("tir.stmt", stmt_to_str)
register("tir.part", part_to_str)
register("tir.func", func_to_str)
register("tir.module", module_to_str)
register("tir.html", to_html)

