"""Changing how a buffer is laid out in memory: ``transform_layout``.

An *index map* sends each index of a buffer to its place in the new layout. Written as a
Python lambda over the old indices, it may use ``+ - * // %`` and integer constants::

    sch.transform_layout(conv, "X", lambda n, c, h, w: (n, c // 16, h, w, c % 16))  # NCHW16c
    sch.transform_layout(mm, "B", lambda k, j: (j // 64, k, j % 64))              # B in panels

The map must be one-to-one on the buffer's indices (checked by enumerating them), and the
new shape is the smallest box holding its image; every access, region and allocation of
the buffer is rewritten, so the program computes the same values.

**Parameters.** A function's parameters are the caller's arrays, so their layout cannot
change without changing the function's signature (TVM does change it). mlcbook keeps the
signature and *repacks* instead: an input ``B`` is copied into a new buffer
``B_packed`` in the new layout by a block of the same name, inserted before its first
reader, and every block reads the packed copy; an output is computed into
``C_packed`` and copied back to ``C`` by a block ``C_packed`` after its writer (which must
be the only one, as for cache_write). The repack block is an ordinary block: parallelize
it, or compute_at it into a tile loop.

In the trace the map is recorded as the text of the lambda (``"lambda k, j: (j // 64, k,
j % 64)"``), which ``transform_layout`` also accepts.
"""

from __future__ import annotations

import ast
import inspect
from typing import Callable, Union

import numpy as np

from ..tir.analysis import collect_blocks, free_vars, loop_ranges
from ..tir.arith import relax
from ..tir.expr import Binary, Buffer, BufferLoad, Const, PrimExpr, Unary, Var, cast, is_int
from ..tir.functor import Mutator, substitute
from ..tir.simplify import simplify
from ..tir.stmt import BlockRealize, BufferRegion, BufferStore, Range
from . import tree
from ._build import fresh_buffer
from .analysis import reads_of, writes_any, writes_of
from .cache import insert_cache_read, insert_cache_write, pick_buffer
from .errors import ArgumentTypeError, UnsupportedError
from .errors_data import BufferIndexError, IndexMapError, NonBijectiveMapError
from .context import Context
from .handles import BlockRV
from .registry import schedule_primitive

#: the largest buffer whose index map is checked by enumeration
ENUMERATION_LIMIT = 1 << 22


# --- the index map --------------------------------------------------------------------------
class IndexMap:
    """``params -> outputs``: old indices (Vars) to new indices (expressions over them)."""

    def __init__(self, params: list[Var], outputs: list[PrimExpr]):
        self.params, self.outputs = params, outputs

    def __call__(self, indices) -> list[PrimExpr]:
        vmap = {p: cast(p.dtype, i) for p, i in zip(self.params, indices)}
        return [substitute(e, vmap) for e in self.outputs]

    def text(self) -> str:
        """The map as the text of a lambda, ``lambda i, j: (j, i)``."""
        outs = ", ".join(str(e) for e in self.outputs)
        if len(self.outputs) == 1:
            outs += ","
        return f"lambda {', '.join(p.name for p in self.params)}: ({outs})"


def _fail_map(ctx: Context, realize: BlockRealize, why: str) -> None:
    ctx.fail(IndexMapError, f"transform_layout: {why}",
             "write the map as a lambda over the buffer's indices returning a tuple of "
             "integer expressions with + - * // %, e.g. lambda i, j: (i // 4, j, i % 4).",
             realize, f"block {realize.block.name!r}")


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}


def _from_text(ctx: Context, realize: BlockRealize, text: str) -> tuple[list[Var], list]:
    """Parse ``"lambda i, j: (...)"`` without running it: only names, ints and + - * // %."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        _fail_map(ctx, realize, f"the index map {text!r} is not valid Python ({err.msg}).")
    if not isinstance(node, ast.Lambda) or node.args.vararg or node.args.kwarg or \
            node.args.kwonlyargs or node.args.defaults or node.args.posonlyargs:
        _fail_map(ctx, realize, f"the index map {text!r} is not a lambda with plain parameters.")
    names = [a.arg for a in node.args.args]
    env = {n: Var(n) for n in names}

    def ev(n) -> PrimExpr:
        if isinstance(n, ast.Name) and n.id in env:
            return env[n.id]
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(
                n.value, bool):
            return Const(n.value, "int32")
        if isinstance(n, ast.BinOp) and type(n.op) in _BINOPS:
            return Binary(_BINOPS[type(n.op)], ev(n.left), ev(n.right))
        if (isinstance(n, ast.Call) and len(n.args) == 2 and not n.keywords
                and _callee(n.func) in ("min", "max")):
            return Binary(_callee(n.func), ev(n.args[0]), ev(n.args[1]))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            a = ev(n.operand)
            return Unary("-", a) if isinstance(n.op, ast.USub) else a
        _fail_map(ctx, realize, f"the index map {text!r} uses {ast.unparse(n)!r}; only the "
                  "lambda's parameters, integer constants, + - * // % and min/max are allowed.")

    body = node.body.elts if isinstance(node.body, (ast.Tuple, ast.List)) else [node.body]
    return [env[n] for n in names], [ev(b) for b in body]


def _callee(f) -> str:
    """``"max"`` for ``max`` and ``T.max`` (how the printer writes it), else ``""``."""
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "T":
        return f.attr
    return ""


def index_map_of(ctx: Context, realize: BlockRealize, fn: Union[str, Callable],
                 ndim: int, buf_name: str) -> IndexMap:
    """The IndexMap of a lambda (or its text) over ``ndim`` indices."""
    if isinstance(fn, str):
        params, outs = _from_text(ctx, realize, fn)
    elif callable(fn):
        try:
            sig = inspect.signature(fn)
            names = [p.name for p in sig.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()):
                names = [f"i{d}" for d in range(ndim)]
        except (TypeError, ValueError):
            names = [f"i{d}" for d in range(ndim)]
        params = [Var(n) for n in names]
        if len(params) == ndim:
            try:
                result = fn(*params)
            except Exception as err:  # noqa: BLE001 - any failure of user code is a bad map
                _fail_map(ctx, realize, f"calling the index map on {buf_name}'s indices "
                          f"raised {type(err).__name__}: {err}.")
            outs = list(result) if isinstance(result, (tuple, list)) else [result]
    else:
        raise ArgumentTypeError("transform_layout: index_map must be a lambda (or its text), "
                                f"got {type(fn).__name__}")
    if len(params) != ndim:
        _fail_map(ctx, realize, f"the index map takes {len(params)} indices but {buf_name} has "
                  f"{ndim} dimensions.")
    if not outs:
        _fail_map(ctx, realize, "the index map returns no indices.")
    exprs = []
    for e in outs:
        if isinstance(e, int) and not isinstance(e, bool):
            e = Const(e, "int32")
        if not isinstance(e, PrimExpr) or not is_int(e.dtype):
            _fail_map(ctx, realize, f"the index map returns {e!r}, which is not an integer "
                      "expression of the indices.")
        if any(all(v is not p for p in params) for v in free_vars(e)):
            _fail_map(ctx, realize, f"the index map's result {e} uses a variable that is not "
                      "one of its parameters.")
        exprs.append(e)
    return IndexMap(params, exprs)


def _np_eval(e: PrimExpr, env: dict):
    if isinstance(e, Var):
        return env[e]
    if isinstance(e, Const):
        return np.int64(e.value)
    if isinstance(e, Unary) and e.op == "-":
        return -_np_eval(e.a, env)
    if isinstance(e, Binary) and e.op in ("+", "-", "*", "//", "%", "min", "max"):
        a, b = _np_eval(e.a, env), _np_eval(e.b, env)
        if e.op in ("//", "%") and np.any(b == 0):
            raise ZeroDivisionError(str(e))
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide,
                "%": np.mod, "min": np.minimum, "max": np.maximum}[e.op](a, b)
    raise ValueError(f"cannot evaluate {e}")


#: one-to-one maps checked already: (buffer shape, map text) -> new shape. Enumerating the
#: map costs ~0.1 s on a conv weight, and a tuning search applies the same map to every point
_CHECKED_SHAPES: dict = {}


def new_shape(ctx: Context, realize: BlockRealize, buf: Buffer, imap: IndexMap) -> tuple:
    """The shape holding the map's image; refuses maps that are not one-to-one."""
    key = (tuple(str(d) for d in buf.shape), imap.text())
    if key not in _CHECKED_SHAPES:
        if len(_CHECKED_SHAPES) > 512:
            _CHECKED_SHAPES.clear()
        _CHECKED_SHAPES[key] = _enumerate_shape(ctx, realize, buf, imap)
    return _CHECKED_SHAPES[key]


def _enumerate_shape(ctx: Context, realize: BlockRealize, buf: Buffer, imap: IndexMap) -> tuple:
    size = int(np.prod(buf.shape))
    label = f"block {realize.block.name!r}"
    if size > ENUMERATION_LIMIT:
        ctx.fail(UnsupportedError, f"transform_layout: {buf.name} has {size} elements, too many "
                 "for mlcbook to check that the index map is one-to-one.",
                 "transform a smaller buffer.", realize, label)
    env = {}
    for d, (p, n) in enumerate(zip(imap.params, buf.shape)):
        shape = [1] * len(buf.shape)
        shape[d] = n
        env[p] = np.arange(n, dtype=np.int64).reshape(shape)
    try:
        outs = [np.broadcast_to(_np_eval(e, env), buf.shape).ravel() for e in imap.outputs]
    except (ValueError, ZeroDivisionError) as err:
        _fail_map(ctx, realize, f"the index map cannot be evaluated ({err}).")
    for e, o in zip(imap.outputs, outs):
        if o.min() < 0:
            bad = np.unravel_index(int(np.argmin(o)), buf.shape)
            _fail_map(ctx, realize, f"the index map sends {buf.name}[{', '.join(map(str, bad))}] "
                      f"to a negative index ({e} = {int(o.min())}).")
    shape = tuple(int(o.max()) + 1 for o in outs)
    lin = np.zeros(size, dtype=np.int64)
    for o, n in zip(outs, shape):
        lin = lin * n + o
    uniq, first, counts = np.unique(lin, return_index=True, return_counts=True)
    if len(uniq) != size:
        dup = int(np.nonzero(counts > 1)[0][0])
        a = int(first[dup])
        b = int(np.nonzero(lin == uniq[dup])[0][1])
        ia, ib = (", ".join(map(str, np.unravel_index(x, buf.shape))) for x in (a, b))
        ctx.fail(NonBijectiveMapError, f"transform_layout: the index map {imap.text()} sends "
                 f"both {buf.name}[{ia}] and {buf.name}[{ib}] to the same place, so one would "
                 "overwrite the other.", "use a one-to-one map (e.g. split an index with // "
                 "and % by the same factor, keeping both parts).", realize, label)
    return shape


# --- rewriting the program ------------------------------------------------------------------
class _Relayout(Mutator):
    def __init__(self, old: Buffer, new: Buffer, imap: IndexMap, ranges: dict):
        self.old, self.new, self.imap, self.ranges = old, new, imap, ranges

    def _map(self, indices) -> tuple:
        return tuple(simplify(e, self.ranges) for e in self.imap(indices))

    def visit_Buffer(self, node):
        return self.new if node is self.old else node

    def visit_BufferLoad(self, node: BufferLoad):
        indices = tuple(self.visit(i) for i in node.indices)
        if node.buffer is self.old:
            return BufferLoad(self.new, self._map(indices))
        return BufferLoad(node.buffer, indices) if any(
            a is not b for a, b in zip(indices, node.indices)) else node

    def visit_BufferStore(self, node: BufferStore):
        if node.buffer is not self.old:
            return self.generic_visit(node)
        indices = tuple(self.visit(i) for i in node.indices)
        return BufferStore(self.new, self.visit(node.value), self._map(indices))

    def visit_BufferRegion(self, node: BufferRegion):
        if node.buffer is not self.old:
            return self.generic_visit(node)
        offsets, relax_ranges, point = [], {}, True
        for d, r in enumerate(node.region):
            if isinstance(r.extent, Const) and r.extent.value == 1:
                offsets.append(r.min)
                continue
            point = False
            off = Var(f"r{d}")
            if isinstance(r.extent, Const):
                relax_ranges[off] = (0, r.extent.value - 1)
                offsets.append(r.min + off)
            else:
                relax_ranges[off] = None
                offsets.append(off)
        if point:
            return BufferRegion(self.new, tuple(Range(e, 1) for e in self._map(offsets)))
        ranges = {**self.ranges, **{v: r for v, r in relax_ranges.items() if r is not None}}
        out = []
        for d, e in enumerate(self.imap(offsets)):
            size = self.new.shape[d]
            if not any(v in relax_ranges for v in free_vars(e)):
                out.append(Range(simplify(e, self.ranges), 1))
                continue
            if any(r is None for v, r in relax_ranges.items() if v in free_vars(e)):
                out.append(Range(0, size))
                continue
            b = relax(e, {v: r for v, r in relax_ranges.items() if r is not None}, ranges)
            if b is None or not (b[1] - b[0]).is_const():
                out.append(Range(0, size))
            else:
                out.append(Range(simplify(b[0].to_expr(), self.ranges),
                                 (b[1] - b[0]).const + 1))
        return BufferRegion(self.new, tuple(out))


def relayout(ctx: Context, buf: Buffer, imap: IndexMap, shape: tuple) -> None:
    """Replace ``buf`` (an allocated buffer) everywhere by a buffer of ``shape`` indexed
    through ``imap``."""
    new = Buffer(buf.name, shape, buf.dtype, buf.scope)
    ranges = loop_ranges(ctx.func.body)
    ctx.set_func(ctx.func.with_body(_Relayout(buf, new, imap, ranges).visit(ctx.func.body)))


def _pick(ctx: Context, realize: BlockRealize, buffer) -> Buffer:
    if isinstance(buffer, str):
        for b in reads_of(realize.block) + writes_of(realize.block):
            if b.name == buffer:
                return b
        return pick_buffer(ctx, realize, buffer, "read", "transform_layout")
    if (isinstance(buffer, (tuple, list)) and len(buffer) == 2 and buffer[0] in ("read", "write")
            and isinstance(buffer[1], int)):
        return pick_buffer(ctx, realize, buffer[1], buffer[0], "transform_layout")
    if isinstance(buffer, int) and not isinstance(buffer, bool):
        ctx.fail(BufferIndexError, f"transform_layout: the buffer index {buffer} does not say "
                 "whether it counts the block's reads or its writes.",
                 f"pass (\"read\", {buffer}), (\"write\", {buffer}) or the buffer's name.",
                 realize, f"block {realize.block.name!r}")
    raise ArgumentTypeError("transform_layout: buffer must be a buffer name, (\"read\", i) or "
                            f"(\"write\", i), got {type(buffer).__name__} {buffer!r:.40}")


@schedule_primitive("transform_layout")
def transform_layout(ctx: Context, block: BlockRV, buffer, index_map) -> None:
    """Lay out ``buffer`` (its name, ``("read", i)`` or ``("write", i)`` of ``block``) by
    ``index_map``; a parameter is repacked into ``<name>_packed`` (see the module docs).

        sch.transform_layout(sch.get_block("C"), "B", lambda k, j: (j // 64, k, j % 64))
    """
    realize = ctx.block_realize(block)
    buf = _pick(ctx, realize, buffer)
    imap = index_map_of(ctx, realize, index_map, len(buf.shape), buf.name)
    ctx.recorded_args["index_map"] = imap.text()
    shape = new_shape(ctx, realize, buf, imap)
    if any(buf is p for p in ctx.func.inputs):
        packed = fresh_buffer(ctx.func, f"{buf.name}_packed", buf, buf.scope)
        root = ctx.func.body
        readers = [b for b in tree.child_blocks(root)
                   if any(x is buf for x in reads_of(b.block))]
        insert_cache_read(ctx, root, buf, readers, packed, "transform_layout")
        buf = packed
    elif any(buf is p for p in ctx.func.outputs):
        packed = fresh_buffer(ctx.func, f"{buf.name}_packed", buf, buf.scope)
        # the innermost block storing to it; insert_cache_write refuses if there are others
        writers = [b for b in collect_blocks(ctx.func.body) if writes_any(b.block, [buf])
                   and not any(writes_any(c.block, [buf]) for c in collect_blocks(b)[1:])]
        writer = realize if any(w is realize for w in writers) else writers[0]
        insert_cache_write(ctx, writer, buf, packed, "transform_layout")
        buf = packed
    relayout(ctx, buf, imap, shape)
    return None


__all__ = ["transform_layout", "IndexMap", "index_map_of", "relayout", "ENUMERATION_LIMIT"]
