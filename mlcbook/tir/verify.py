"""The verifier: the facts every well-formed PrimFunc satisfies, checked with clear errors.

Run after every construction step a user triggers (parsing script, ``te.create_prim_func``,
each schedule primitive). It checks that

- every variable and buffer is defined where it is used, and a block's body sees only its
  own iteration variables (not the loops outside it): that is what makes a block movable;
- each block binding stays inside its iteration variable's domain;
- no store writes an input parameter;
- no index is provably out of bounds (constant indices, and indices of block bodies
  whose iteration domains are known);
- block names are unique and no variable is bound twice.
"""

from __future__ import annotations

from ..errors import (BindingMismatchError, DuplicateNameError, IndexOutOfBoundsError,
                      ReadOnlyStoreError, TIRError, UndefinedVariableError)
from .arith import int_bounds
from .expr import Buffer, BufferLoad, Const, Var
from .function import IRModule, PrimFunc
from .functor import Visitor
from .stmt import Allocate, Block, BlockRealize, BufferRegion, BufferStore, For


def verify(func_or_mod) -> None:
    """Raise an :class:`~mlcbook.errors.TIRError` subclass if the program is malformed."""
    if isinstance(func_or_mod, IRModule):
        for f in func_or_mod.functions.values():
            if isinstance(f, PrimFunc):
                verify(f)
        return
    _Verifier(func_or_mod).run()


class _Verifier(Visitor):
    def __init__(self, func: PrimFunc):
        self.func = func
        self.vars: list[dict[int, Var]] = [{}]      # scopes of visible variables
        self.ranges: dict = {}                        # var -> inclusive (lo, hi), when known
        self.buffers: dict[int, Buffer] = {id(b): b for b in func.params}
        self.inputs = {id(b) for b in func.inputs}
        self.bound: set[int] = set()
        self.block_names: set[str] = set()
        self.where = f"function {func.name!r}"

    def run(self) -> None:
        self.visit(self.func.body)

    # --- definitions -----------------------------------------------------------------------
    def _define(self, v: Var, rng=None) -> None:
        if id(v) in self.bound:
            raise DuplicateNameError(
                f"variable {v.name!r} is bound twice in {self.where}; every loop and block "
                "iteration variable must be a fresh variable")
        self.bound.add(id(v))
        self.vars[-1][id(v)] = v
        if rng is not None:
            self.ranges[v] = rng

    def _visible(self, v: Var) -> bool:
        return any(id(v) in scope for scope in self.vars)

    def visit_Var(self, v: Var) -> None:
        if not self._visible(v):
            if id(v) in self.bound:
                raise UndefinedVariableError(
                    f"variable {v.name!r} is used inside {self.where}, which cannot see it: a "
                    "block's body may only use the block's own iteration variables. Bind it as "
                    f"an iteration variable of the block, e.g. `v{v.name} = T.axis.spatial(extent, {v.name})` "
                    f"(or `T.axis.reduce(...)` if the block sums or reduces over it)")
            raise UndefinedVariableError(
                f"variable {v.name!r} is used in {self.where} but never defined; define it as a "
                "loop variable or a block iteration variable")

    def _use_buffer(self, b: Buffer) -> None:
        if id(b) not in self.buffers:
            raise UndefinedVariableError(
                f"buffer {b.name!r} is used in {self.where} but is neither a parameter nor "
                "allocated; add it to the parameters or allocate it with T.alloc_buffer")

    # --- statements ---------------------------------------------------------------------------
    def visit_For(self, s: For) -> None:
        self.visit(s.extent)
        rng = (0, s.extent.value - 1) if isinstance(s.extent, Const) else None
        self._define(s.loop_var, rng)
        self.visit(s.body)

    def visit_Allocate(self, s: Allocate) -> None:
        self.buffers[id(s.buffer)] = s.buffer
        self.visit(s.body)

    def visit_BlockRealize(self, s: BlockRealize) -> None:
        block = s.block
        for v in s.iter_values:
            self.visit(v)
        self.visit(s.predicate)
        has_predicate = not (isinstance(s.predicate, Const) and s.predicate.value is True)
        for iv, value in zip(block.iter_vars, s.iter_values):
            self.visit(iv.extent)
            if not isinstance(iv.extent, Const):
                continue
            b = int_bounds(value, self.ranges)
            ext = iv.extent.value
            if b is not None and (b[0] < 0 or (b[1] >= ext and not has_predicate)):
                raise BindingMismatchError(
                    f"block {block.name!r}: iteration variable {iv.var.name} has domain "
                    f"[0, {ext}) but is bound to {value}, which takes values in "
                    f"[{b[0]}, {b[1]}]; bind it to an expression that stays inside the domain, "
                    "or add a predicate with T.where(...)")
        self._visit_block(block)

    def _visit_block(self, block: Block) -> None:
        if block.name in self.block_names:
            raise DuplicateNameError(
                f"two blocks are named {block.name!r} in function {self.func.name!r}; "
                "block names must be unique")
        self.block_names.add(block.name)
        outer_where, outer_vars = self.where, self.vars
        if block.name != "root" or block.iter_vars:
            self.where = f"block {block.name!r}"
        # a block sees only its own iteration variables: open a fresh scope stack
        self.vars = [{}]
        for iv in block.iter_vars:
            self._define(iv.var, (0, iv.extent.value - 1) if isinstance(iv.extent, Const) else None)
        for b in block.alloc_buffers:
            self.buffers[id(b)] = b
        for region in block.reads + block.writes:
            self._visit_region(region)
        for region in block.writes:
            self._check_writable(region.buffer)
        if block.init is not None:
            self.visit(block.init)
        self.visit(block.body)
        self.where, self.vars = outer_where, outer_vars

    def _visit_region(self, region: BufferRegion) -> None:
        self._use_buffer(region.buffer)
        for r in region.region:
            self.visit(r.min)
            self.visit(r.extent)

    def _check_writable(self, buf: Buffer) -> None:
        if id(buf) in self.inputs:
            raise ReadOnlyStoreError(
                f"{self.where} writes to {buf.name!r}, an input parameter of function "
                f"{self.func.name!r}; write to an output (the last {self.func.num_outputs} "
                "parameter(s)) or to a buffer allocated with T.alloc_buffer")

    def visit_BufferStore(self, s: BufferStore) -> None:
        self._use_buffer(s.buffer)
        self._check_writable(s.buffer)
        self._check_indices(s.buffer, s.indices)
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self._use_buffer(e.buffer)
        self._check_indices(e.buffer, e.indices)
        self.generic_visit(e)

    def visit_Block(self, block: Block) -> None:
        raise TIRError(f"block {block.name!r} appears without a BlockRealize (its bindings)")

    def _check_indices(self, buf: Buffer, indices) -> None:
        for dim, (idx, size) in enumerate(zip(indices, buf.shape)):
            if isinstance(idx, Const):
                lo = hi = idx.value
            elif self.where.startswith("block"):
                b = int_bounds(idx, self.ranges)
                if b is None:
                    continue
                lo, hi = b
            else:
                continue
            if lo < 0 or hi >= size:
                shown = ", ".join(str(i) for i in indices)
                raise IndexOutOfBoundsError(
                    f"{buf.name}[{shown}] in {self.where}: index {idx} of dimension {dim} can "
                    f"take values in [{lo}, {hi}] but that dimension has size {size}; keep "
                    f"every index in [0, {size - 1}]")
