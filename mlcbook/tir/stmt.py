"""Statements of the loop IR: stores, loops, blocks, sequences, conditionals.

A *block* states what is computed: over which iteration domain (its ``iter_vars``, each
spatial or reduce), reading and writing which buffer regions, with an optional ``init``
for reductions. The loops around a block state how: the :class:`BlockRealize` binds each
iteration variable to an expression of the surrounding loop variables.

    for i, j, k in T.grid(128, 128, 128):          # For, For, For
        with T.block("C"):                          # BlockRealize + Block
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]   # BufferStore
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from ..printing import printer
from ..errors import DTypeMismatchError, ShapeError, TIRError
from .expr import Buffer, Const, PrimExpr, Var, as_expr, check_indices, is_int


def _part_str(self) -> str:
    return printer("tir.part")(self)


class Stmt:
    """Base of every statement."""

    __slots__ = ()
    __hash__ = object.__hash__

    def __str__(self) -> str:
        return printer("tir.stmt")(self)


def _as_index(value) -> PrimExpr:
    e = as_expr(value, "int32")
    if not is_int(e.dtype):
        raise DTypeMismatchError(f"{e} is used as an extent or index but has dtype {e.dtype}")
    return e


@dataclass(frozen=True, eq=False, repr=False)
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]

    def __post_init__(self):
        object.__setattr__(self, "indices", tuple(_as_index(i) for i in self.indices))
        check_indices(self.buffer, self.indices)
        value = as_expr(self.value, self.buffer.dtype)
        if value.dtype != self.buffer.dtype:
            raise DTypeMismatchError(
                f"storing a {value.dtype} value ({value}) into {self.buffer.name}, a "
                f"{self.buffer.dtype} buffer; cast the value with "
                f"mb.tir.cast({self.buffer.dtype!r}, ...)")
        object.__setattr__(self, "value", value)


LOOP_KINDS = ("serial", "parallel", "vectorized", "unrolled")


def freeze_annotations(ann) -> tuple[tuple[str, Any], ...]:
    if ann is None:
        return ()
    items = ann.items() if isinstance(ann, dict) else ann
    return tuple(sorted((str(k), v) for k, v in items))


@dataclass(frozen=True, eq=False, repr=False)
class For(Stmt):
    """``for loop_var in range(extent): body``; loops always start at 0.

    ``kind`` is one of :data:`LOOP_KINDS`; ``annotations`` is a sorted tuple of
    ``(key, value)`` pairs (a dict is accepted and frozen).
    """

    loop_var: Var
    extent: PrimExpr
    body: Stmt
    kind: str = "serial"
    annotations: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "extent", _as_index(self.extent))
        if self.kind not in LOOP_KINDS:
            raise TIRError(f"unknown loop kind {self.kind!r}; use one of {', '.join(LOOP_KINDS)}")
        if isinstance(self.extent, Const) and self.extent.value <= 0:
            raise ShapeError(
                f"loop {self.loop_var.name} has extent {self.extent.value}; extents must be positive")
        object.__setattr__(self, "annotations", freeze_annotations(self.annotations))


@dataclass(frozen=True, eq=False, repr=False)
class Range:
    """The half-open interval ``[min, min + extent)``."""

    __str__ = _part_str

    min: PrimExpr
    extent: PrimExpr

    def __post_init__(self):
        object.__setattr__(self, "min", _as_index(self.min))
        object.__setattr__(self, "extent", _as_index(self.extent))

    __hash__ = object.__hash__


@dataclass(frozen=True, eq=False, repr=False)
class BufferRegion:
    """A rectangular region of a buffer, one :class:`Range` per dimension."""

    __str__ = _part_str

    buffer: Buffer
    region: tuple[Range, ...]

    __hash__ = object.__hash__

    def __post_init__(self):
        if len(self.region) != self.buffer.ndim:
            raise ShapeError(
                f"region of buffer {self.buffer.name!r} has {len(self.region)} ranges but the "
                f"buffer has {self.buffer.ndim} dimensions")

    @staticmethod
    def full(buffer: Buffer) -> "BufferRegion":
        return BufferRegion(buffer, tuple(Range(0, s) for s in buffer.shape))

    @staticmethod
    def point(buffer: Buffer, indices) -> "BufferRegion":
        return BufferRegion(buffer, tuple(Range(i, 1) for i in indices))


ITER_KINDS = ("spatial", "reduce")

#: block annotation ``{KEEP_MATERIALIZED: True}``: the block's value is read several times
#: (a recurrent state, a stage of a low-bit conversion), so default schedules keep it a block
#: of its own, stored once, rather than inlining it into its readers (the loop IR shares no
#: subexpressions, so an inlined value is computed again at every read) or folding it into
#: its producer
KEEP_MATERIALIZED = "keep_materialized"

#: block annotation ``{UNROLLED_TILE: ((2, 2), (3, 2))}``: the block's value depends on its
#: iteration variables at these positions modulo the given factors (a Winograd transform picks a matrix
#: row by its position in a tile), so default schedules split each such loop by its factor
#: and unroll the inner parts just above the vectorized innermost loop, where the positions
#: become constants and the selects on them fold; such a block takes its elementwise readers
#: in (``reverse_compute_inline``) instead of being inlined into them
UNROLLED_TILE = "unrolled_tile"


@dataclass(frozen=True, eq=False, repr=False)
class IterVar:
    """An iteration variable of a block: ``var`` ranges over ``[0, extent)``; kind spatial or reduce."""

    __str__ = _part_str

    var: Var
    extent: PrimExpr
    kind: str = "spatial"

    __hash__ = object.__hash__

    def __post_init__(self):
        object.__setattr__(self, "extent", _as_index(self.extent))
        if self.kind not in ITER_KINDS:
            raise TIRError(f"unknown iteration kind {self.kind!r}; use 'spatial' or 'reduce'")


@dataclass(frozen=True, eq=False, repr=False)
class Block(Stmt):
    """What is computed: iteration domain, regions read and written, optional init, body.

    ``alloc_buffers`` are buffers that live only inside this block (the root block of a
    function holds the function's intermediate buffers).
    """

    name: str
    iter_vars: tuple[IterVar, ...]
    reads: tuple[BufferRegion, ...]
    writes: tuple[BufferRegion, ...]
    body: Stmt
    init: Optional[Stmt] = None
    alloc_buffers: tuple[Buffer, ...] = ()
    annotations: tuple = ()

    def __post_init__(self):
        for f in ("iter_vars", "reads", "writes", "alloc_buffers"):
            object.__setattr__(self, f, tuple(getattr(self, f)))
        object.__setattr__(self, "annotations", freeze_annotations(self.annotations))


@dataclass(frozen=True, eq=False, repr=False)
class BlockRealize(Stmt):
    """A block placed in the loop nest: each iteration variable bound to a value, under a predicate."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block

    def __post_init__(self):
        object.__setattr__(self, "iter_values", tuple(_as_index(v) for v in self.iter_values))
        pred = as_expr(self.predicate)
        if pred.dtype != "bool":
            raise DTypeMismatchError(f"block predicate {pred} must be bool, got {pred.dtype}")
        object.__setattr__(self, "predicate", pred)
        if len(self.iter_values) != len(self.block.iter_vars):
            raise TIRError(
                f"block {self.block.name!r} has {len(self.block.iter_vars)} iteration variables "
                f"but {len(self.iter_values)} bindings; bind each one exactly once")


@dataclass(frozen=True, eq=False, repr=False)
class SeqStmt(Stmt):
    """Statements run one after another."""

    stmts: tuple[Stmt, ...]

    def __post_init__(self):
        object.__setattr__(self, "stmts", tuple(self.stmts))


@dataclass(frozen=True, eq=False, repr=False)
class IfThenElse(Stmt):
    """``if cond: then_case else: else_case`` (``else_case`` may be None)."""

    cond: PrimExpr
    then_case: Stmt
    else_case: Optional[Stmt] = None

    def __post_init__(self):
        cond = as_expr(self.cond)
        if cond.dtype != "bool":
            raise DTypeMismatchError(f"if-condition {cond} must be bool, got {cond.dtype}")
        object.__setattr__(self, "cond", cond)


@dataclass(frozen=True, eq=False, repr=False)
class Allocate(Stmt):
    """``buffer`` exists (uninitialized) during ``body``. Produced by lowering from block allocations."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True, eq=False, repr=False)
class Evaluate(Stmt):
    """Evaluate an expression for nothing but its existence (a no-op placeholder body)."""

    value: PrimExpr


def seq(*stmts: Union[Stmt, None]) -> Stmt:
    """Flatten statements into one; a single statement is returned as is."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        else:
            flat.append(s)
    if not flat:
        return Evaluate(Const(0, "int32"))
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


def no_op() -> Stmt:
    return Evaluate(Const(0, "int32"))


__all__ = ["Stmt", "BufferStore", "For", "Range", "BufferRegion", "IterVar", "Block",
           "BlockRealize", "SeqStmt", "IfThenElse", "Allocate", "Evaluate", "seq", "no_op",
           "LOOP_KINDS", "ITER_KINDS", "KEEP_MATERIALIZED",
           "UNROLLED_TILE"]
