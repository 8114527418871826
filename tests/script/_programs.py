"""Hypothesis strategies for random well-formed PrimFuncs covering every IR node kind.

Programs are built with the IR constructors and satisfy ``verify``: buffer indices stay in
bounds (a constant in range, or ``expr % size``), block bindings stay inside their domain
(the extent is computed from the binding's bounds), block bodies use only their own
iteration variables, and only outputs and allocations are written. Names are drawn from a
small pool that collides on purpose and includes names the printer must change
(``T``, ``range``, ``for``, ``a b``, ``0v``, ``x²``, and ``ﬁ``, which Python reads as ``fi``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from hypothesis import strategies as st

from mlcbook.tir import (Allocate, Binary, Block, BlockRealize, Buffer, BufferLoad, BufferRegion,
                         BufferStore, Call, Cast, Const, Evaluate, For, IfThenElse, IterVar,
                         PrimFunc, Range, Select, Unary, Var, root_block_realize, seq)
from mlcbook.tir.arith import int_bounds
from mlcbook.tir.expr import MATH_FUNCS
from mlcbook.tir.stmt import LOOP_KINDS

NAMES = ["i", "j", "i_1", "k", "vi", "A", "B", "T", "range", "for", "a b", "0v", "x²", "ﬁ"]
INTS = ("int32", "int64")
FLOATS = ("float32", "float64")
STORAGE = ("int8", "uint8", "float16")
ALL = INTS + FLOATS + STORAGE + ("bool",)
CONST_VALUES = {
    "int32": st.integers(-2**31, 2**31 - 1), "int64": st.integers(-2**63, 2**63 - 1),
    "int8": st.integers(-128, 127), "uint8": st.integers(0, 255), "bool": st.booleans(),
    **{d: st.floats(width=64) for d in FLOATS + ("float16",)},
}
ANN_VALUES = st.one_of(st.integers(-5, 1000), st.text(max_size=4), st.booleans(), st.none(),
                       st.floats(allow_nan=False, allow_infinity=False),
                       st.tuples(st.integers(0, 9), st.integers(0, 9)))
ANNOTATIONS = st.dictionaries(st.text(max_size=6), ANN_VALUES, max_size=2)


@dataclass
class Ctx:
    """What a statement may use: variables (with known ranges), readable/writable buffers."""

    vars: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    loops: dict = field(default_factory=dict)   # enclosing loop var -> its constant extent
    read: list = field(default_factory=list)
    write: list = field(default_factory=list)

    def with_var(self, v: Var, ext) -> "Ctx":
        c = dataclasses.replace(self, vars=self.vars + [v], ranges=dict(self.ranges),
                                loops=dict(self.loops))
        if isinstance(ext, Const):
            c.ranges[v] = (0, ext.value - 1)
            c.loops[v] = ext
        return c

    def with_buffers(self, bufs) -> "Ctx":
        return dataclasses.replace(self, read=self.read + list(bufs), write=self.write + list(bufs))


class Gen:
    def __init__(self, draw):
        self.draw = draw
        self.blocks = 0

    def pick(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, p=0.5) -> bool:
        return self.draw(st.floats(0, 1)) < p

    def name(self) -> str:
        return self.pick(NAMES)

    # --- expressions ---------------------------------------------------------------------
    def const(self, dtype: str) -> Const:
        return Const(self.draw(CONST_VALUES[dtype]), dtype)

    def expr(self, dtype: str, ctx: Ctx, depth: int):
        kinds = ["const"]
        if any(v.dtype == dtype for v in ctx.vars):
            kinds += ["var", "var"]
        if any(b.dtype == dtype for b in ctx.read):
            kinds.append("load")
        if depth > 0:
            kinds += ["select", "cast"]
            if dtype in INTS + FLOATS:
                kinds += ["arith", "arith", "neg", "minmax", "call"]
            if dtype == "bool":
                kinds += ["cmp", "logic", "not"]
        kind = self.pick(kinds)
        sub = depth - 1
        if kind == "const":
            return self.const(dtype)
        if kind == "var":
            return self.pick([v for v in ctx.vars if v.dtype == dtype])
        if kind == "load":
            buf = self.pick([b for b in ctx.read if b.dtype == dtype])
            return BufferLoad(buf, self.indices(buf, ctx, sub))
        if kind == "select":
            return Select(self.expr("bool", ctx, sub), self.expr(dtype, ctx, sub),
                          self.expr(dtype, ctx, sub))
        if kind == "cast":
            return Cast(dtype, self.expr(self.pick(ALL), ctx, sub))
        if kind == "arith":
            ops = ["+", "-", "*", "min", "max"] + (["//", "%"] if dtype in INTS else ["/"])
            return Binary(self.pick(ops), self.expr(dtype, ctx, sub), self.expr(dtype, ctx, sub))
        if kind == "neg":
            return Unary("-", self.expr(dtype, ctx, sub))
        if kind == "minmax":
            return Binary(self.pick(["min", "max"]), self.expr(dtype, ctx, sub),
                          self.expr(dtype, ctx, sub))
        if kind == "call":
            fn = "abs" if dtype in INTS else self.pick(MATH_FUNCS)
            return Call(fn, tuple(self.expr(dtype, ctx, sub) for _ in range(MATH_FUNCS[fn])))
        if kind == "cmp":
            t = self.pick(INTS + FLOATS)
            return Binary(self.pick(["==", "!=", "<", "<=", ">", ">="]),
                          self.expr(t, ctx, sub), self.expr(t, ctx, sub))
        if kind == "logic":
            return Binary(self.pick(["and", "or"]), self.expr("bool", ctx, sub),
                          self.expr("bool", ctx, sub))
        return Unary("not", self.expr("bool", ctx, sub))

    def index(self, size: int, ctx: Ctx, depth: int):
        if not ctx.vars or self.chance(0.3):
            return Const(self.draw(st.integers(0, size - 1)), "int32")
        dtype = self.pick(INTS)
        if self.chance(0.5) and any(v.dtype == dtype for v in ctx.vars):
            e = self.pick([v for v in ctx.vars if v.dtype == dtype])   # the common case, i * 4
            if self.chance(0.5):
                e = e * Const(self.draw(st.integers(1, 4)), dtype) + self.expr(dtype, ctx, 0)
        else:
            e = self.expr(dtype, ctx, max(depth, 0))
        return e % Const(size, dtype)

    def indices(self, buf: Buffer, ctx: Ctx, depth: int) -> tuple:
        return tuple(self.index(s, ctx, depth) for s in buf.shape)

    # --- statements ----------------------------------------------------------------------
    def buffer(self) -> Buffer:
        shape = tuple(self.draw(st.lists(st.integers(1, 6), min_size=0, max_size=2)))
        scope = "local" if self.chance(0.1) else "global"
        return Buffer(self.name(), shape, self.pick(ALL), scope)

    def stmt(self, ctx: Ctx, depth: int):
        kinds = ["evaluate"] + (["store", "store"] if ctx.write else [])
        if depth > 0:
            kinds += ["for"] * 4 + ["block"] * 3 + ["seq", "seq", "if", "allocate"]
        kind = self.pick(kinds)
        sub = depth - 1
        if kind == "evaluate":
            return Evaluate(self.expr(self.pick(ALL), ctx, 1))
        if kind == "store":
            buf = self.pick(ctx.write)
            return BufferStore(buf, self.expr(buf.dtype, ctx, 2), self.indices(buf, ctx, 1))
        if kind == "for":
            return self.loop(ctx, sub)
        if kind == "seq":
            return seq(*(self.stmt(ctx, sub) for _ in range(self.draw(st.integers(2, 3)))))
        if kind == "if":
            els = self.stmt(ctx, sub) if self.chance() else None
            return IfThenElse(self.expr("bool", ctx, 2), self.stmt(ctx, sub), els)
        if kind == "allocate":
            buf = self.buffer()
            return Allocate(buf, self.stmt(ctx.with_buffers([buf]), sub))
        return self.block(ctx, sub)

    def loop(self, ctx: Ctx, depth: int) -> For:
        dtype = self.pick(INTS) if self.chance(0.3) else "int32"
        if ctx.vars and self.chance(0.15):  # an extent that depends on an outer loop
            v = self.pick(ctx.vars)
            extent = Cast(dtype, v) + Const(1, dtype)
        else:
            extent = Const(self.draw(st.integers(1, 6)), dtype)
        plain = self.chance(0.7)
        kind = "serial" if plain else self.pick(LOOP_KINDS)
        ann = {} if plain else self.draw(ANNOTATIONS)
        var_dtype = self.pick(INTS) if not plain and self.chance(0.2) else dtype
        v = Var(self.name(), var_dtype)
        inner = ctx.with_var(v, extent)
        if depth > 0 and self.chance(0.5):
            body = self.loop(inner, depth - 1)
        elif self.chance(0.5):
            body = self.block(inner, depth)
        else:
            body = self.stmt(inner, depth)
        return For(v, extent, body, kind, ann)

    def binding(self, ctx: Ctx, unused: list) -> tuple:
        """(value, extent) with the value inside [0, extent) whenever its bounds are known."""
        if unused and self.chance(0.85):
            v = unused.pop(0)
            return v, ctx.loops[v]                # remappable
        if ctx.loops and self.chance(0.5):
            v = self.pick(list(ctx.loops))
            c = Const(self.draw(st.integers(1, 4)), v.dtype)
            value = v * c + self.expr(v.dtype, ctx, 0) % c
        else:
            dtype = self.pick(INTS)
            value = self.expr(dtype, ctx, 1) % Const(self.draw(st.integers(1, 8)), dtype)
        b = int_bounds(value, ctx.ranges)
        hi = b[1] if b is not None and b[0] >= 0 else self.draw(st.integers(0, 8))
        return value, Const(hi + 1 + self.draw(st.integers(0, 2)), value.dtype)

    def region(self, buf: Buffer, ctx: Ctx) -> BufferRegion:
        ranges = []
        for size in buf.shape:
            form = self.pick(["point", "point", "full", "expr", "int64"])
            if form == "point":
                idx = self.index(size, ctx, 1)
                ranges.append(Range(idx, Const(1, idx.dtype)))
            elif form == "full":
                lo = self.draw(st.integers(0, size - 1))
                ranges.append(Range(lo, Const(size - lo, "int32")))
            elif form == "expr":
                ranges.append(Range(self.index(size, ctx, 1), self.expr("int32", ctx, 1)))
            else:
                ranges.append(Range(self.expr("int32", ctx, 1), Const(1, "int64")))
        return BufferRegion(buf, tuple(ranges))

    def block(self, ctx: Ctx, depth: int) -> BlockRealize:
        self.blocks += 1
        name = f"b{self.blocks}" if self.chance(0.9) else f'b"{self.blocks}\\ü'
        ivs, values = [], []
        unused = list(ctx.loops)
        n_iv = len(unused) if unused and self.chance(0.7) else self.draw(st.integers(0, 3))
        for _ in range(n_iv):
            value, extent = self.binding(ctx, unused)
            dtype = extent.dtype if self.chance(0.95) else self.pick(INTS)
            ivs.append(IterVar(Var(self.pick(["vi", "vj", "i", "v"]), dtype), extent,
                               self.pick(["spatial", "reduce"])))
            values.append(value)
        pred = self.expr("bool", ctx, 1) if self.chance(0.2) else Const(True, "bool")
        allocs = [self.buffer() for _ in range(self.draw(st.integers(0, 2)))]
        inner = Ctx(read=ctx.read + allocs, write=ctx.write + allocs)
        for iv in ivs:
            inner = inner.with_var(iv.var, iv.extent)
        inner.loops = {}   # no loop encloses the block's body yet
        regions = lambda bufs: tuple(self.region(self.pick(bufs), inner)  # noqa: E731
                                     for _ in range(self.draw(st.integers(0, 2)))) if bufs else ()
        reads, writes = regions(inner.read), regions(inner.write)
        init = self.stmt(inner, depth) if self.chance(0.3) else None
        ann = self.draw(ANNOTATIONS) if self.chance(0.2) else {}
        block = Block(name, tuple(ivs), reads, writes, self.stmt(inner, depth), init,
                      tuple(allocs), ann)
        return BlockRealize(tuple(values), pred, block)


@st.composite
def prim_funcs(draw, depth: int = 3) -> PrimFunc:
    g = Gen(draw)
    names = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=4, unique=True))
    params = []
    for n in names:
        b = g.buffer()
        params.append(Buffer(n, b.shape, b.dtype, b.scope))
    num_outputs = draw(st.integers(0, len(params)))
    outputs = params[len(params) - num_outputs:]
    mode = g.pick(["root", "root", "root", "no_root", "odd_root"])
    allocs = [g.buffer() for _ in range(draw(st.integers(0, 2)))] if mode != "no_root" else []
    ctx = Ctx(read=params + allocs, write=outputs + allocs)
    body = g.stmt(ctx, depth)
    if mode != "no_root":
        body = root_block_realize(body, allocs)
    if mode == "odd_root":  # a root block carrying something the text must show
        body = dataclasses.replace(body, block=dataclasses.replace(
            body.block, annotations={"note": draw(st.integers(0, 9))}))
    attrs = draw(ANNOTATIONS) if g.chance(0.2) else {}
    return PrimFunc(g.name(), tuple(params), body, num_outputs, attrs)
