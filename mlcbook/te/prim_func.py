"""``create_prim_func``: a TE program becomes a PrimFunc with one block per compute stage.

    >>> func = create_prim_func([A, B, C])      # inputs first, computed outputs last
    >>> print(func)

Each compute stage becomes a loop nest ``for i, j, k in T.grid(...)`` (reduce loops
innermost) around a block named after the tensor: spatial iteration variables are bound
to the spatial loops, reduce iteration variables to the reduce loops, a reduction gets an
``init`` storing its identity and the body ``C[vi, vj] = C[vi, vj] + ...`` (``T.max(C[..],
...)`` for max). Stages that are not parameters become ``alloc_buffers`` of the root block.

Read and write regions, stated in the block's iteration variables:

- a buffer read at one index tuple gets the point region, ``A[vi, vk]``;
- a buffer read at several index tuples gets, per dimension, the point if all indices agree,
  the hull ``A[vi - 1:vi + 2]`` if they differ only by constants, and otherwise the bounds
  of the indices over the block's iteration domain (the whole dimension if unbounded);
- the stage writes the point ``C[vi, vj]``; its own accumulator read is not listed.

A point region is exact for any index expression, because a region describes what *one*
block instance touches.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Iterable, Optional

from ..errors import TEError
from ..tir.arith import int_bounds
from ..tir.expr import Binary, Buffer, BufferLoad, Const, PrimExpr, Var, select
from ..tir.function import PrimFunc, root_block_realize
from ..tir.functor import Mutator, post_order_visit, replace_buffers
from ..tir.names import fresh_name
from ..tir.stmt import (Block, BlockRealize, BufferRegion, BufferStore, For, IterVar, Range,
                        Stmt, seq)
from ..tir.verify import verify
from .reduction import Reduce
from .tensor import Tensor


def create_prim_func(tensors: Iterable[Tensor], name: str = "main") -> PrimFunc:
    """The PrimFunc whose parameters are ``tensors``: placeholders (inputs) first, then the
    computed outputs. Every stage the outputs need is computed; stages not in the list
    become intermediate buffers. The result is verified."""
    params = _check_params(tensors)
    outputs = [t for t in params if not t.is_placeholder]
    stages = _stages(params, outputs)

    # intermediate buffers get names unique among the parameters and each other,
    # because a block is named after its buffer and block names must be unique
    param_ids = {id(t) for t in params}
    taken = {t.name for t in params}
    allocs, rename = [], {}
    for t in stages:
        if id(t) not in param_ids:
            new_name = fresh_name(t.name, taken)
            if new_name != t.name:
                rename[t.buffer] = Buffer(new_name, t.shape, t.dtype)
            allocs.append(rename.get(t.buffer, t.buffer))

    nests = [_stage_nest(t, rename.get(t.buffer, t.buffer)) for t in stages]
    # the bodies still load the renamed intermediates under their old buffers
    body = replace_buffers(root_block_realize(seq(*nests), tuple(allocs)), rename)
    func = PrimFunc(name, tuple(t.buffer for t in params), body, num_outputs=len(outputs))
    verify(func)
    return func


def _check_params(tensors) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        raise TEError("create_prim_func takes a list of tensors, e.g. [A, B, C], not a "
                      f"single tensor ({tensors.name!r})")
    params = list(tensors)
    for n, t in enumerate(params):
        if not isinstance(t, Tensor):
            raise TEError(f"create_prim_func: item {n} of the list is {t!r}, not a te tensor; "
                          "pass the placeholders and computed tensors, e.g. [A, B, C]")
        for other in params[:n]:
            if other is t:
                raise TEError(f"create_prim_func: tensor {t.name!r} is listed twice; list "
                              "each tensor once")
            if other.name == t.name:
                raise TEError(f"create_prim_func: two tensors are named {t.name!r}; parameters "
                              "need distinct names, pass name=... when creating them")
    first_output = None
    for t in params:
        if not t.is_placeholder and first_output is None:
            first_output = t
        elif t.is_placeholder and first_output is not None:
            raise TEError(
                f"create_prim_func: computed tensor {first_output.name!r} comes before "
                f"placeholder {t.name!r}; list the inputs (placeholders) first and the "
                "computed outputs last")
    if first_output is None:
        raise TEError("create_prim_func: the list has no computed tensor; add the output "
                      "(a te.compute result) at the end")
    return params


def _stages(params: list[Tensor], outputs: list[Tensor]) -> list[Tensor]:
    """The compute tensors the outputs need, each after the stages it reads."""
    listed = {id(t) for t in params}
    order: list[Tensor] = []
    done: set[int] = set()

    def visit(t: Tensor, reader: Optional[Tensor]) -> None:
        if id(t) in done:
            return
        done.add(id(t))
        if t.is_placeholder:
            if id(t) not in listed:
                raise TEError(
                    f"create_prim_func: placeholder {t.name!r}, read by {reader.name!r}, is "
                    "missing from the list of tensors; add it among the inputs, before the "
                    "outputs")
            return
        for inp in t.op.inputs:
            visit(inp, t)
        order.append(t)

    for t in outputs:
        visit(t, None)
    return order


class _Substitute(Mutator):
    """Replace axis variables, reduce axes included (ReduceAxis is a Var subclass)."""

    def __init__(self, vmap: dict):
        self.vmap = vmap

    def visit_Var(self, node):
        return self.vmap.get(node, node)

    visit_ReduceAxis = visit_Var


def _stage_nest(t: Tensor, buf: Buffer) -> Stmt:
    """``for ...: with T.block(buf.name): ...``: the stage computing ``t`` into ``buf``."""
    op = t.op
    red = op.body if isinstance(op.body, Reduce) else None
    axes = list(op.axis) + (list(red.axis) if red is not None else [])
    extents = list(t.shape) + ([ax.extent for ax in red.axis] if red is not None else [])
    kinds = ["spatial"] * len(op.axis) + ["reduce"] * (len(axes) - len(op.axis))
    names: set[str] = set()
    loop_names = [fresh_name(a.name, names) for a in axes]
    loops = [Var(n) for n in loop_names]
    ivars = [Var("v" + n) for n in loop_names]

    vmap = {}
    for ax, iv in zip(axes, ivars):
        start = getattr(ax, "start", 0)
        vmap[ax] = iv + start if start else iv
    sub = _Substitute(vmap)
    idx = tuple(ivars[: len(op.axis)])
    if red is None:
        value = sub.visit(op.body)
        body, init = BufferStore(buf, value, idx), None
    else:
        value = sub.visit(red.source)
        if red.where is not None:
            value = select(sub.visit(red.where), value, red.identity())
        body = BufferStore(buf, red.combine(BufferLoad(buf, idx), value), idx)
        init = BufferStore(buf, red.identity(), idx)

    domain = {iv: (0, ext - 1) for iv, ext in zip(ivars, extents)}
    block = Block(
        buf.name,
        tuple(IterVar(iv, ext, kind) for iv, ext, kind in zip(ivars, extents, kinds)),
        _read_regions(value, buf, domain),
        (BufferRegion.point(buf, idx),),
        body, init, annotations=op.attrs)
    nest: Stmt = BlockRealize(tuple(loops), Const(True, "bool"), block)
    for lv, ext in reversed(list(zip(loops, extents))):
        nest = For(lv, ext, nest)
    return nest


# --- regions ---------------------------------------------------------------------------------
def _read_regions(value: PrimExpr, out: Buffer, domain: dict) -> tuple[BufferRegion, ...]:
    accesses: dict[int, tuple[Buffer, list]] = {}

    def visit(n):
        if isinstance(n, BufferLoad) and n.buffer is not out:
            accesses.setdefault(id(n.buffer), (n.buffer, []))[1].append(n.indices)

    post_order_visit(value, visit)
    regions = []
    for buf, index_lists in accesses.values():
        ranges = tuple(_dim_range([ix[d] for ix in index_lists], size, domain)
                       for d, size in enumerate(buf.shape))
        regions.append(BufferRegion(buf, ranges))
    return tuple(regions)


def _dim_range(indices: list[PrimExpr], size: int, domain: dict) -> Range:
    first = indices[0]
    if all(_same(first, e) for e in indices[1:]):
        return Range(first, 1)
    parts = [_split_offset(e) for e in indices]
    base = parts[0][0]
    if all(_same(base, b) for b, _ in parts[1:]):
        lo = min(c for _, c in parts)
        hi = max(c for _, c in parts)
        start = Const(lo, "int32") if base is None else (base + lo if lo else base)
        return Range(start, hi - lo + 1)
    bounds = [int_bounds(e, domain) for e in indices]
    if any(b is None for b in bounds):
        return Range(0, size)
    lo = max(0, min(b[0] for b in bounds))
    hi = min(size - 1, max(b[1] for b in bounds))
    return Range(lo, hi - lo + 1)


def _split_offset(e: PrimExpr):
    """``e`` as ``(base, constant)`` with ``e == base + constant``; base None for a constant."""
    if isinstance(e, Const):
        return None, int(e.value)
    if isinstance(e, Binary) and isinstance(e.b, Const) and e.op in ("+", "-"):
        return e.a, int(e.b.value) if e.op == "+" else -int(e.b.value)
    return e, 0


def _same(a, b) -> bool:
    """Exact equality of expressions: the same variables and buffers (not up to renaming)."""
    if a is b:
        return True
    if type(a) is not type(b) or a is None or b is None:
        return False
    if isinstance(a, (Var, Buffer)):
        return False
    if isinstance(a, Const):
        return a.dtype == b.dtype and a.value == b.value
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(type(a), "__dataclass_fields__"):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in fields(a) if f.init)
    return a == b
