"""Computing a block with a hardware tensor instruction: ``tensorize``.

``sch.tensorize(loop, "x86.avx2.dot_u8i8_8x4")`` blockizes the loops from ``loop`` down
(:mod:`.blockize`) and proves that the new outer block computes the intrinsic's ``desc`` on
one tile of its buffers: the same loop extents, bindings that are the loops plus an offset,
the same stored expression with the same index pattern and dtypes. Given a block, it checks
that block's body the same way. The block is then marked with the annotation
``tensor_intrin``; lowering puts the intrinsic's ``impl`` in its place, while the interpreter
and the reference evaluator keep running the block's body, which is ``desc`` on the tile::

    i0, j0, k0, i1, j1, k1 = ...                    # tiles of 8 x 4 over (j, k)
    sch.tensorize(j1, "x86.avx2.dot_u8i8_8x4")      # a mismatch is a TensorizeError saying
                                                    # which part (index pattern, dtype, ...)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Union

from ..errors import TIRError
from ..tir.stmt import For
from ..tir.tensor_intrin import ANNOTATION, IntrinMismatch, TensorIntrin, match
from .blockize import blockize_loop
from .context import Context
from .errors_data import TensorizeError
from .handles import BlockRV, LoopRV
from .registry import schedule_primitive


@schedule_primitive("tensorize")
def tensorize(ctx: Context, block_or_loop: Union[BlockRV, LoopRV], intrin: str) -> BlockRV:
    """Mark a block (or the loops from a loop down, blockized) as computed by ``intrin``.
    Returns the tensorized block.

        C_o = sch.tensorize(j1, "x86.fma_f32_4x16x4")
    """
    try:
        ti = TensorIntrin.get(intrin)
    except TIRError as e:
        raise TensorizeError(str(e)) from None
    if isinstance(block_or_loop, LoopRV):
        node = ctx.loop(block_or_loop)
        realize, mark = blockize_loop(ctx, node), node
    else:
        realize = ctx.block_realize(block_or_loop)
        mark = node = realize
    block = realize.block
    try:
        match(ti, block.body)
    except IntrinMismatch as e:
        ctx.fail(TensorizeError, f"tensorize with {intrin!r}: the {e.part} does not match "
                 f"desc: {e.why}.", "schedule the block so that its inner loops compute "
                 f"exactly {intrin}'s desc (mb.tir.TensorIntrin.get({intrin!r}).desc shows it) "
                 "on one tile, and tensorize at the outermost of those loops.", mark,
                 f"loop {node.loop_var.name}" if isinstance(node, For) else f"block {block.name}")
    ann = dict(block.annotations)
    ann[ANNOTATION] = intrin
    tagged = replace(realize, block=replace(block, annotations=ann))
    ctx.replace(node, tagged)
    return ctx.block_rv(tagged.block.name)


__all__ = ["tensorize"]
