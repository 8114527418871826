"""Tensor intrinsics: a small tensor computation that a hardware instruction does at once.

An intrinsic has two halves, as in TVM. ``desc`` is a PrimFunc saying *what* it computes,
one loop nest around one block over tile-sized buffers; ``impl`` is a PrimFunc with the same
parameters saying *how*: its body is ``Evaluate(TensorCall(op, tile loads))``, a call that
code generation turns into the instructions (``mb.codegen`` knows each ``op``)::

    desc:  for i, k in T.grid(16, 4):              impl:  T.tensor_call("x86.vpdpbusd.16x4",
             with T.block("update"):                                    A[0], B[0, 0], C[0])
               vi, vk = T.axis.remap("SR", [i, k])
               C[vi] += i32(A[vk]) * i32(B[vi, vk])

    >>> TensorIntrin.register("dot_16x4", desc, impl, features=("avx512vnni",))
    >>> TensorIntrin.get("dot_16x4").desc is desc
    True

``sch.tensorize`` proves with :func:`match` that a block computes ``desc`` on some tile of
its buffers and marks the block with the annotation ``tensor_intrin``. The block keeps its
body, which is ``desc`` placed on those tiles, so the interpreter and the reference evaluator
still run it and check it; :func:`place_impl` (the first lowering stage) puts ``impl`` there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from ..errors import TIRError
from .analysis import free_vars
from .arith import affine
from .expr import Binary, BufferLoad, Call, Const, PrimExpr, TensorCall, Unary, Var
from .function import PrimFunc
from .functor import Mutator, post_order_visit, substitute
from .simplify import simplify
from .stmt import Block, BlockRealize, BufferStore, Evaluate, For, Stmt

#: the block annotation naming the intrinsic a block was tensorized with
ANNOTATION = "tensor_intrin"


class IntrinMismatch(TIRError):
    """A block does not compute an intrinsic's ``desc``; the message says which part differs."""

    code = "MLC-T009"

    def __init__(self, part: str, why: str):
        super().__init__(why)
        self.part, self.why = part, why


@dataclass(frozen=True)
class TensorIntrin:
    """A registered intrinsic: ``desc`` (what), ``impl`` (how), CPU ``features`` it needs
    (LLVM names without ``+``: ``("avx512vnni",)``)."""

    name: str
    desc: PrimFunc
    impl: PrimFunc
    features: tuple[str, ...] = ()

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, features=(),
                 override: bool = False) -> "TensorIntrin":
        """Register an intrinsic under ``name``; ``desc`` and ``impl`` take the same buffers."""
        if name in _REGISTRY and not override:
            raise TIRError(f"a tensor intrinsic named {name!r} is already registered; "
                           "Instead: pick another name, or pass override=True")
        if [(b.shape, b.dtype) for b in desc.params] != [(b.shape, b.dtype) for b in impl.params]:
            raise TIRError(f"tensor intrinsic {name!r}: desc and impl must take buffers of the "
                           "same shapes and dtypes, in the same order")
        desc_nest(desc)  # raises if desc is not one loop nest around one block
        if not isinstance(impl.body, Evaluate) or not isinstance(impl.body.value, TensorCall):
            raise TIRError(f"tensor intrinsic {name!r}: impl's body must be "
                           "Evaluate(TensorCall(...)) calling an op code generation knows")
        intrin = TensorIntrin(name, desc, impl, tuple(features))
        _REGISTRY[name] = intrin
        return intrin

    @staticmethod
    def get(name: str) -> "TensorIntrin":
        try:
            return _REGISTRY[name]
        except KeyError:
            raise TIRError(f"no tensor intrinsic named {name!r}; registered: "
                           f"{', '.join(sorted(_REGISTRY)) or 'none'}. Instead: register it "
                           "with mb.tir.TensorIntrin.register(name, desc, impl)") from None

    @staticmethod
    def names() -> list[str]:
        return sorted(_REGISTRY)

    def missing_features(self, target) -> list[str]:
        """The features this intrinsic needs that ``target`` (an ``mb.Target``) lacks."""
        return [f for f in self.features if not target.has_feature(f)]

    @staticmethod
    def available(target) -> list[str]:
        """Names of the intrinsics ``target`` can run (all its features present)."""
        return [n for n, t in sorted(_REGISTRY.items()) if not t.missing_features(target)]


_REGISTRY: dict[str, TensorIntrin] = {}


def nest(stmt: Stmt) -> tuple[list[For], Optional[BlockRealize]]:
    """The perfectly nested loops from ``stmt`` down and the one block under them (or None)."""
    loops = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt if isinstance(stmt, BlockRealize) else None


def desc_nest(desc: PrimFunc) -> tuple[list[For], BlockRealize]:
    body = desc.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars:
        body = body.block.body  # the root block
    loops, realize = nest(body)
    if realize is None or not isinstance(realize.block.body, BufferStore):
        raise TIRError(f"desc {desc.name!r} must be a loop nest around one block whose body is "
                       "one store")
    return loops, realize


@dataclass(frozen=True)
class Match:
    """Where ``desc``'s buffers lie in the program: ``buffers[k]`` is the program buffer of
    desc parameter ``k`` and ``offsets[k]`` the index of its tile's origin."""

    buffers: tuple
    offsets: tuple


def match(intrin: TensorIntrin, body: Stmt) -> Match:
    """Check that ``body`` (an outer block's body) computes ``intrin.desc`` on tiles; raise
    :class:`IntrinMismatch` naming the first part that differs."""
    dloops, drealize = desc_nest(intrin.desc)
    loops, realize = nest(body)
    if realize is None:
        raise IntrinMismatch("structure", "the block's body is not a loop nest around one block")
    if len(loops) != len(dloops):
        raise IntrinMismatch("iteration domain", f"the block runs {len(loops)} loop(s) but "
                             f"desc runs {len(dloops)}")
    for k, (lp, dl) in enumerate(zip(loops, dloops)):
        if not isinstance(lp.extent, Const) or lp.extent.value != dl.extent.value:
            raise IntrinMismatch("iteration domain", f"loop {lp.loop_var.name} has extent "
                                 f"{lp.extent} but desc's loop {k} has extent {dl.extent}")
    block, dblock = realize.block, drealize.block
    if block.init is not None:
        raise IntrinMismatch("init", f"block {block.name!r} has an init; desc accumulates only. "
                             "Instead: blockize first (it moves the init out)")
    inner = [lp.loop_var for lp in loops]
    # iteration variables bound to the outer block's variables only are fixed on the tile
    tiled = [(iv, v) for iv, v in zip(block.iter_vars, realize.iter_values)
             if any(u in inner for u in free_vars(v))]
    loop_of = {dl.loop_var: k for k, dl in enumerate(dloops)}
    # a loop of extent 1 leaves no trace in the bindings (its variable is always 0), so
    # desc's variable on such a loop, if nothing in the block moves with it, is the constant 0
    used = {u for _, v in tiled for u in free_vars(v)}
    fixed = {div.var for div, dv in zip(dblock.iter_vars, drealize.iter_values)
             if dv in loop_of and dloops[loop_of[dv]].extent.value == 1
             and inner[loop_of[dv]] not in used}
    dmoving = [(div, dv) for div, dv in zip(dblock.iter_vars, drealize.iter_values)
               if div.var not in fixed]
    if len(tiled) != len(dmoving):
        raise IntrinMismatch("iteration domain", f"block {block.name!r} has {len(tiled)} "
                             f"iteration variables that move inside the tile, desc has "
                             f"{len(dmoving)}")
    zero = {v: Const(0, v.dtype) for v in inner}
    bindings = dict((iv.var, v) for iv, v in zip(block.iter_vars, realize.iter_values))
    for (iv, value), (div, dvalue) in zip(tiled, dmoving):
        if iv.kind != div.kind:
            raise IntrinMismatch("iteration domain", f"{iv.var.name} is {iv.kind} but desc's "
                                 f"{div.var.name} is {div.kind}")
        k = loop_of.get(dvalue)
        a = affine(value)
        used = [v for v in inner if a is not None and a.coeffs.get(v, 0)]
        if k is None or a is None or used != [inner[k]] or a.coeffs[inner[k]] != 1:
            raise IntrinMismatch("index pattern", f"{iv.var.name} is bound to {value}, not to "
                                 f"loop {inner[k].name if k is not None else '?'} plus an "
                                 "offset as desc binds it")
    varmap = {div.var: iv.var for (iv, _), (div, _) in zip(tiled, dmoving)}
    varmap.update({v: Const(0, v.dtype) for v in fixed})
    buffers: dict = {}
    _same(dblock.body, block.body, varmap, buffers)
    offsets = []
    dzero = {div.var: Const(0, div.var.dtype) for div in dblock.iter_vars}
    first = {}
    post_order_visit(block.body, lambda n: first.setdefault(
        n.buffer, n.indices) if isinstance(n, (BufferLoad, BufferStore)) else None)
    dfirst = {}
    post_order_visit(dblock.body, lambda n: dfirst.setdefault(
        n.buffer, n.indices) if isinstance(n, (BufferLoad, BufferStore)) else None)
    out = []
    for p in intrin.desc.params:
        if p not in buffers:
            raise IntrinMismatch("buffers", f"desc's buffer {p.name} is not used by its block")
        out.append(buffers[p])
        actual = first[buffers[p]]
        extra = len(actual) - len(dfirst[p])
        idx = [simplify(substitute(substitute(e, bindings), zero)) for e in actual]
        for k, de in enumerate(dfirst[p]):
            idx[extra + k] = simplify(idx[extra + k] - simplify(substitute(de, dzero)))
        offsets.append(tuple(idx))
    return Match(tuple(out), tuple(offsets))


def _same(d, a, varmap: dict, buffers: dict, where: str = "the stored value") -> None:
    """Compare desc node ``d`` with program node ``a`` (desc vars renamed by ``varmap``,
    desc buffers bound to program buffers in ``buffers`` as they are met)."""
    if isinstance(d, (BufferStore, BufferLoad)):
        if type(a) is not type(d):
            raise IntrinMismatch("computation", f"{where}: desc has {d}, the block has "
                                 f"{a}")
        if d.buffer.dtype != a.buffer.dtype:
            raise IntrinMismatch("dtype", f"buffer {a.buffer.name} is {a.buffer.dtype} but desc's "
                                 f"{d.buffer.name} is {d.buffer.dtype}")
        bound = buffers.setdefault(d.buffer, a.buffer)
        if bound is not a.buffer:
            raise IntrinMismatch("buffers", f"desc's {d.buffer.name} would be both "
                                 f"{bound.name} and {a.buffer.name}")
        extra = len(a.indices) - len(d.indices)
        if extra < 0:
            raise IntrinMismatch("index pattern", f"{a.buffer.name} has {len(a.indices)} "
                                 f"indices, desc's {d.buffer.name} {len(d.indices)}")
        moving = {v for v in varmap.values() if isinstance(v, Var)}
        for k, y in enumerate(a.indices[:extra]):
            if any(v in moving for v in free_vars(y)):
                raise IntrinMismatch("index pattern", f"index {k} of {a.buffer.name} is {y}, "
                                     f"which moves inside the tile, but desc's {d.buffer.name} "
                                     "has no such dimension")
        for k, (x, y) in enumerate(zip(d.indices, a.indices[extra:])):
            if not _same_in_tile(substitute(x, varmap), y, moving):
                raise IntrinMismatch("index pattern", f"index {extra + k} of {a.buffer.name} "
                                     f"is {y} but desc's {d.buffer.name} is indexed by "
                                     f"{substitute(x, varmap)}")
        if isinstance(d, BufferStore):
            _same(d.value, a.value, varmap, buffers)
        return
    if type(a) is not type(d) or getattr(a, "dtype", None) != getattr(d, "dtype", None):
        raise IntrinMismatch("dtype" if type(a) is type(d) else "computation",
                             f"{where}: desc computes {d}, the block {a}")
    if isinstance(d, Const) and d.value != a.value:
        raise IntrinMismatch("computation", f"{where}: constant {a} instead of {d}")
    if isinstance(d, Var) and varmap.get(d, d) is not a:
        raise IntrinMismatch("computation", f"{where}: {a} instead of {d}")
    if isinstance(d, (Binary, Unary, Call)) and getattr(d, "op", getattr(d, "name", None)) != \
            getattr(a, "op", getattr(a, "name", None)):
        raise IntrinMismatch("computation", f"{where}: desc computes {d}, the block "
                             f"{a}")
    for f in ("a", "b", "value", "cond", "true_value", "false_value"):
        if hasattr(d, f) and isinstance(getattr(d, f), PrimExpr):
            _same(getattr(d, f), getattr(a, f), varmap, buffers, where)
    if isinstance(d, Call):
        for x, y in zip(d.args, a.args):
            _same(x, y, varmap, buffers, where)


def _same_in_tile(x: PrimExpr, y: PrimExpr, moving: set) -> bool:
    """Whether ``y - x`` stays the same across the tile (uses no variable in ``moving``):
    the program's index is desc's plus the tile's origin."""
    diff = affine(simplify(y - x)) if x.dtype == y.dtype else None
    return diff is not None and not any(c for v, c in diff.coeffs.items() if v in moving)


def place_intrinsics(body: Stmt) -> Stmt:
    """Every tensorized block of ``body`` with its intrinsic's ``impl`` in place."""

    class _Blocks(Mutator):
        def visit_Block(self, b: Block):
            return place_impl(self.generic_visit(b))

    return _Blocks().visit(body)


def place_impl(block: Block) -> Block:
    """``block`` with its body replaced by its intrinsic's ``impl`` placed on the matched
    tiles (a block without the annotation is returned as is)."""
    name = dict(block.annotations).get(ANNOTATION)
    if name is None:
        return block
    intrin = TensorIntrin.get(name)
    m = match(intrin, block.body)
    where = {p: (b, off) for p, b, off in zip(intrin.impl.params, m.buffers, m.offsets)}

    class _Place(Mutator):
        def visit_BufferLoad(self, e: BufferLoad):
            b, off = where[e.buffer]
            extra = len(off) - len(e.indices)
            return BufferLoad(b, off[:extra] + tuple(
                simplify(o + i) for o, i in zip(off[extra:], e.indices)))

        def visit_TensorCall(self, e: TensorCall):
            args = tuple(self.visit(x) for x in e.args)
            # each impl buffer sees the innermost strides of the program buffer it is on
            return TensorCall(e.op, args, tuple(_strides(x.buffer.shape)[-p.buffer.ndim:]
                                                for x, p in zip(args, e.args)))

    return replace(block, body=Evaluate(_Place().visit(intrin.impl.body.value)))


def _strides(shape) -> tuple[int, ...]:
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


__all__ = ["TensorIntrin", "IntrinMismatch", "Match", "match", "place_impl", "place_intrinsics",
           "nest", "desc_nest", "ANNOTATION"]
