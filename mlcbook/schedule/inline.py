"""Removing a block by substituting it into its neighbour: ``compute_inline`` and
``reverse_compute_inline``.

``compute_inline(B)`` replaces every read ``B_buf[x, y]`` in B's consumers by the value B
stores there; ``reverse_compute_inline(C)`` folds an elementwise consumer into its
producer, so that the producer writes C's output directly::

    Y[vi, vj] = A[vi, vj] * 2             compute_inline("Y")
    C[vi, vj] = T.max(Y[vi, vj], 0)       ->   C[vi, vj] = T.max(A[vi, vj] * 2, 0)

Both need the removed block to be a single elementwise store, and remove the
intermediate buffer's allocation when nothing else uses it.
"""

from __future__ import annotations

from dataclasses import replace

from ..tir.analysis import collect_blocks
from ..tir.regions import infer_regions
from ..tir.expr import Buffer, BufferLoad, Var
from ..tir.functor import Mutator, substitute
from ..tir.stmt import Block, BlockRealize, BufferStore, Stmt
from . import tree
from .analysis import reads_of, touches, writes_any, writes_of
from .errors import NotInlinableError, NotProducerConsumerError, OutputBlockError
from .context import Context
from .handles import BlockRV
from .registry import schedule_primitive


def _elementwise_store(ctx: Context, realize: BlockRealize, step: str) -> BufferStore:
    """The block's single store ``B[v0, v1, ...] = value`` over distinct spatial variables."""
    block, name = realize.block, realize.block.name
    why = None
    if block.init is not None or any(iv.kind != "spatial" for iv in block.iter_vars):
        why = "it is a reduction (it has reduce iteration variables or an init)"
    elif not isinstance(block.body, BufferStore):
        why = "its body is not a single store"
    elif block.alloc_buffers:
        why = "it allocates buffers of its own"
    else:
        st = block.body
        ivs = [iv.var for iv in block.iter_vars]
        if not (all(isinstance(i, Var) for i in st.indices)
                and len({id(i) for i in st.indices}) == len(st.indices) == len(ivs)
                and all(any(i is v for v in ivs) for i in st.indices)):
            why = (f"its store indices [{', '.join(str(i) for i in st.indices)}] are not its "
                   "iteration variables, each used once")
        elif any(b is st.buffer for b in reads_of(block)):
            why = f"it reads {st.buffer.name}, the buffer it writes"
    if why is not None:
        ctx.fail(NotInlinableError, f"cannot {step} block {name!r}: {why}, so it is not one "
                 "value per element that can be substituted.",
                 "only inline elementwise blocks, e.g. Y[vi, vj] = f(A[vi, vj]).", realize,
                 f"block {name!r}")
    if not tree.is_true(realize.predicate):
        ctx.fail(NotInlinableError, f"cannot {step} block {name!r}: it has a predicate "
                 "(T.where) that skips some elements.", f"{step} before splitting its loops "
                 "with factors that do not divide them.", realize, f"block {name!r}")
    return block.body


def _remove_alloc(body: Stmt, buf: Buffer) -> Stmt:
    """Drop ``buf`` from the allocations of the block that owns it, if nothing uses it."""
    still_used = any(touches(b.block, [buf]) for b in _blocks(body))
    if still_used:
        return body

    def drop(s: Stmt):
        if isinstance(s, Block) and any(b is buf for b in s.alloc_buffers):
            return replace(s, alloc_buffers=tuple(b for b in s.alloc_buffers if b is not buf))
        return s

    return tree.map_stmts(body, drop)


def _with_regions(block: Block) -> Block:
    """The block with reads and writes recomputed from its body, as the script parser does."""
    reads, writes = infer_regions(block.body, block.init, block.iter_vars, block.alloc_buffers)
    return replace(block, reads=reads, writes=writes)


@schedule_primitive("compute_inline")
def compute_inline(ctx: Context, block: BlockRV) -> None:
    """Substitute an elementwise block into every block that reads its output, and remove it.

        sch.compute_inline(sch.get_block("Y"))
    """
    realize = ctx.block_realize(block)
    st = _elementwise_store(ctx, realize, "compute_inline")
    name, buf = realize.block.name, st.buffer
    if any(buf is p for p in ctx.func.params):
        ctx.fail(OutputBlockError, f"cannot compute_inline block {name!r}: it writes "
                 f"{buf.name}, a parameter of the function, which must still be written.",
                 "inline blocks that write intermediate buffers (T.alloc_buffer).", realize,
                 f"block {name!r}")
    scope = ctx.scope_of(realize)
    blocks = tree.child_blocks(scope)
    me = next(k for k, b in enumerate(blocks) if b is realize)
    inputs = reads_of(realize.block)
    others = [b for b in _blocks(ctx.func.body) if b is not realize]
    for b in others:
        if writes_any(b.block, [buf]):
            ctx.fail(NotInlinableError, f"cannot compute_inline block {name!r}: block "
                     f"{b.block.name!r} also writes {buf.name}, so a read of {buf.name} does not "
                     f"always see {name!r}'s value.", "inline only the single producer of a "
                     "buffer.", b, f"block {b.block.name!r}")
    for k, b in enumerate(blocks):
        if touches(b.block, [buf]) and k < me:
            ctx.fail(NotProducerConsumerError, f"cannot compute_inline block {name!r}: block "
                     f"{b.block.name!r} reads {buf.name} before {name!r} writes it.",
                     "", b, f"block {b.block.name!r}")
    consumers = [b for b in others if touches(b.block, [buf])]
    last = max((k for k, b in enumerate(blocks) if any(
        tree.path_to(b, c) is not None for c in consumers)), default=me)
    for b in blocks[me + 1:last]:
        if writes_any(b.block, inputs):
            ctx.fail(NotProducerConsumerError, f"cannot compute_inline block {name!r}: block "
                     f"{b.block.name!r} changes {', '.join(x.name for x in writes_of(b.block))}, "
                     f"which {name!r} reads, before a consumer would use the value.",
                     "inline into consumers that run before that change, or keep the block.",
                     b, f"block {b.block.name!r}")
    ivs = [iv.var for iv in realize.block.iter_vars]
    order = [next(k for k, i in enumerate(st.indices) if i is v) for v in ivs]

    class _Inline(Mutator):
        def visit_BufferLoad(self, n: BufferLoad):
            n = self.generic_visit(n)
            if n.buffer is not buf:
                return n
            return substitute(st.value, {v: n.indices[k] for v, k in zip(ivs, order)})

    targets = {id(c.block) for c in consumers}

    def rewrite(s: Stmt):
        if s is realize:
            return None
        if isinstance(s, Block) and id(s) in targets:
            return _with_regions(replace(
                s, body=_Inline().visit(s.body),
                init=_Inline().visit(s.init) if s.init is not None else None))
        return s

    body = tree.map_stmts(ctx.func.body, rewrite)
    ctx.set_func(ctx.func.with_body(_remove_alloc(body, buf)))


@schedule_primitive("reverse_compute_inline")
def reverse_compute_inline(ctx: Context, block: BlockRV) -> None:
    """Fold an elementwise consumer into its producer, which then writes the consumer's output.

        sch.reverse_compute_inline(sch.get_block("relu"))
    """
    realize = ctx.block_realize(block)
    st = _elementwise_store(ctx, realize, "reverse_compute_inline")
    C, name = realize.block, realize.block.name
    scope = ctx.scope_of(realize)
    blocks = tree.child_blocks(scope)
    me = next(k for k, b in enumerate(blocks) if b is realize)
    ivs = [iv.var for iv in C.iter_vars]
    # the one buffer C reads at exactly its iteration variables, produced by a block before it
    cand = []
    for b in blocks[:me]:
        for x in writes_of(b.block):
            if any(x is y for y in reads_of(C)):
                cand.append((b, x))
    if len(cand) != 1:
        ctx.fail(NotInlinableError, f"cannot reverse_compute_inline block {name!r}: it must read "
                 f"exactly one buffer written by an earlier block, but it reads "
                 f"{len(cand)} such.", "use compute_inline on the producers instead.",
                 realize, f"block {name!r}")
    producer, buf = cand[0]
    loads = [ld for ld in _loads_of(C) if ld.buffer is buf]
    pos = {id(v): k for k, v in enumerate(ivs)}
    ok = (len(loads) >= 1 and all(
        len(ld.indices) == len(ivs) and all(isinstance(i, Var) and id(i) in pos for i in ld.indices)
        and len({id(i) for i in ld.indices}) == len(ivs)
        and all(a is b for a, b in zip(ld.indices, loads[0].indices)) for ld in loads))
    if not ok:
        ctx.fail(NotInlinableError, f"cannot reverse_compute_inline block {name!r}: it must read "
                 f"{buf.name} at its own iteration variables (each once, the same everywhere), "
                 "so that each producer instance maps to one consumer instance.",
                 "use compute_inline on the producer instead.", realize, f"block {name!r}")
    if any(buf is p for p in ctx.func.params):
        ctx.fail(OutputBlockError, f"cannot reverse_compute_inline block {name!r}: {buf.name} is a "
                 "parameter of the function and must still be written.", "", realize,
                 f"block {name!r}")
    P = producer.block
    if P.init is not None or any(iv.kind != "spatial" for iv in P.iter_vars):
        ctx.fail(NotInlinableError, f"cannot reverse_compute_inline block {name!r} into "
                 f"{P.name!r}: the producer is a reduction, and the consumer would run on "
                 "every partial sum.", "decompose the reduction first, or keep the block.",
                 producer, f"block {P.name!r}")
    if not isinstance(P.body, BufferStore) or P.body.buffer is not buf or any(
            x is buf for x in reads_of(P)):
        ctx.fail(NotInlinableError, f"cannot reverse_compute_inline block {name!r} into "
                 f"{P.name!r}: the producer is not a single store to {buf.name}.",
                 "keep the block, or compute_inline the producer instead.", producer,
                 f"block {P.name!r}")
    pst = P.body
    readers = [b for b in _blocks(ctx.func.body)
               if b is not realize and b is not producer and touches(b.block, [buf])]
    if readers:
        ctx.fail(NotProducerConsumerError, f"cannot reverse_compute_inline block {name!r}: block "
                 f"{readers[0].block.name!r} also uses {buf.name}, which would no longer be "
                 "written.", "inline or move that block first.", readers[0],
                 f"block {readers[0].block.name!r}")
    pk = next(k for k, b in enumerate(blocks) if b is producer)
    for b in blocks[pk + 1:me]:
        if writes_any(b.block, reads_of(C)) or touches(b.block, writes_of(C)):
            ctx.fail(NotProducerConsumerError, f"cannot reverse_compute_inline block {name!r}: "
                     f"block {b.block.name!r} runs between it and its producer and uses its data.",
                     "move that block first.", b, f"block {b.block.name!r}")
    # C's variable at dimension d of buf takes the producer's store index at dimension d
    vmap = {v: pst.indices[k] for k, v in enumerate(loads[0].indices)}
    produced = pst.value

    class _Fold(Mutator):
        def visit_BufferLoad(self, n: BufferLoad):
            n = self.generic_visit(n)
            return produced if n.buffer is buf else n

    new_value = _Fold().visit(substitute(st.value, vmap))
    new_indices = tuple(substitute(i, vmap) for i in st.indices)
    new_P = _with_regions(replace(P, body=BufferStore(st.buffer, new_value, new_indices)))

    def rewrite(s: Stmt):
        if s is realize:
            return None
        if s is P:
            return new_P
        return s

    body = tree.map_stmts(ctx.func.body, rewrite)
    ctx.set_func(ctx.func.with_body(_remove_alloc(body, buf)))


def _blocks(body: Stmt) -> list[BlockRealize]:
    """Every block of the function but the root (whose accesses are those of all others)."""
    return [b for b in collect_blocks(body) if b is not body]


def _loads_of(block: Block) -> list[BufferLoad]:
    out: list[BufferLoad] = []

    class _V(Mutator):
        def visit_BufferLoad(self, n: BufferLoad):
            out.append(n)
            return self.generic_visit(n)

    _V().visit(block.body)
    return out

