"""How a loop runs: ``parallel``, ``vectorize``, ``unroll``; and free-form ``annotate``.

The loop nest stays the same; only the loop's kind changes, which tells code generation
to spread its iterations over threads, SIMD lanes, or copies of the body. Running
iterations at the same time is only allowed when they are independent (see :mod:`.deps`).
A vectorized loop must moreover compile to vector code:
:func:`.postconditions.check_vector_lanes` runs code generation's own lane rule on the
lowered loop, both when ``vectorize`` marks a loop and after every later step that
rebuilds it (so e.g. a ``compute_at`` into a vectorized loop that would make its lanes
share memory is refused).

    sch.parallel(io)        # for i_0 in T.parallel(4):
    sch.vectorize(ji)       # for j_1 in T.vectorized(8):
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Union

from ..tir.expr import Const
from ..tir.stmt import For
from . import tree
from .deps import check_independent
from .errors import (AnnotationError, NonConstantExtentError, UnrollTooLargeError,
                     VectorizeNotInnermostError, VectorLaneError)
from .context import Context
from .handles import BlockRV, LoopRV
from .postconditions import check_vector_lanes
from .registry import schedule_primitive


def _set_kind(ctx: Context, node: For, kind: str) -> None:
    if node.kind != kind:
        ctx.replace(node, For(node.loop_var, node.extent, node.body, kind, node.annotations))


@schedule_primitive("parallel")
def parallel(ctx: Context, loop: LoopRV) -> None:
    """Run the iterations of ``loop`` on several threads at once.

    Refused when the loop feeds a reduction axis, or when iterations would write the same
    data or read what other iterations write.
    """
    node = ctx.loop(loop)
    if ctx.checks:
        check_independent(ctx, node, [node], "parallelize", concurrent=True)
    _set_kind(ctx, node, "parallel")


@schedule_primitive("vectorize")
def vectorize(ctx: Context, loop: LoopRV) -> None:
    """Run the iterations of ``loop`` as SIMD lanes: the loop must be innermost, with a
    constant extent, not inside another vectorized loop, its iterations independent (as for
    :func:`parallel`), and each lane must use its own elements of every buffer the loop
    writes once the program is lowered (:func:`.postconditions.check_vector_lanes`)."""
    node = ctx.loop(loop)
    name = node.loop_var.name
    before = ctx.func
    outer = next((lp for lp in ctx.path(node)[:-1]
                  if isinstance(lp, For) and lp.kind == "vectorized"), None)
    if outer is not None:
        ctx.fail(VectorLaneError,
                 f"cannot vectorize loop {name}: loop {outer.loop_var.name} around it is "
                 "already vectorized, and only one loop of a nest can become SIMD lanes.",
                 f"vectorize either {outer.loop_var.name} or {name}, not both.", node,
                 f"loop {name}")
    if not isinstance(node.extent, Const):
        ctx.fail(NonConstantExtentError,
                 f"cannot vectorize loop {name}: its extent {node.extent} is not a constant, and "
                 "the number of SIMD lanes must be known when compiling.",
                 "split it with a constant inner factor and vectorize the inner loop.",
                 node, f"loop {name}")
    inner = tree.loops_under(node.body)
    if inner:
        ctx.fail(VectorizeNotInnermostError,
                 f"cannot vectorize loop {name}: loop {inner[0].loop_var.name} is inside it, and "
                 "only the innermost loop's iterations can become SIMD lanes.",
                 f"reorder so that {name} is innermost, or vectorize the innermost loop "
                 "instead.", node, f"loop {name}")
    if ctx.checks:
        check_independent(ctx, node, [node], "vectorize", concurrent=True)
    _set_kind(ctx, node, "vectorized")
    if ctx.checks:
        check_vector_lanes(ctx, "vectorize", before, marked=node.loop_var)


#: most copies of a loop body that nested unrolled loops may ask for (the product of their
#: extents); code generation refuses more too. LLVM takes minutes on ten thousand copies.
MAX_UNROLLED_COPIES = 4096


@schedule_primitive("unroll")
def unroll(ctx: Context, loop: LoopRV) -> None:
    """Ask code generation to copy the body once per iteration (always keeps the meaning).

    Refused when the loop, together with the unrolled loops around and inside it, would copy
    a body more than :data:`MAX_UNROLLED_COPIES` times (the product of their extents).
    """
    node = ctx.loop(loop)
    name = node.loop_var.name
    if not isinstance(node.extent, Const):
        ctx.fail(NonConstantExtentError,
                 f"cannot unroll loop {name}: its extent {node.extent} is not a "
                 "constant, so the number of copies is unknown.",
                 "split it with a constant inner factor and unroll the inner loop.", node,
                 f"loop {name}")
    copies = _unrolled_copies(ctx, node)
    if copies > MAX_UNROLLED_COPIES:
        ctx.fail(UnrollTooLargeError,
                 f"cannot unroll loop {name}: with the unrolled loops around and inside it, "
                 f"the body would be copied {copies} times (the product of their extents), "
                 f"more than {MAX_UNROLLED_COPIES}; compiling that takes LLVM minutes.",
                 "unroll fewer nested loops, or split a loop and unroll only its inner part.",
                 node, f"loop {name}")
    _set_kind(ctx, node, "unrolled")


def _unrolled_copies(ctx: Context, node: For) -> int:
    """Copies of the deepest body if ``node`` were unrolled: the largest product of unrolled
    extents along a path through ``node``."""
    def extent(lp) -> int:
        unrolled = lp is node or lp.kind == "unrolled"
        return lp.extent.value if unrolled and isinstance(lp.extent, Const) else 1

    outer = math.prod(extent(lp) for lp in ctx.path(node)[:-1] if isinstance(lp, For))
    inner = max((math.prod(extent(lp) for lp in tree.path_to(node, inside)
                           if isinstance(lp, For)) for inside in tree.loops_under(node)),
                default=extent(node))
    return outer * inner


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, list):
        for v in value:
            _check_value(key, v)
    elif value is not None and not isinstance(value, (bool, int, float, str)):
        raise AnnotationError(f"annotation {key!r} has value {value!r} of type "
                              f"{type(value).__name__}; use an int, float, str, bool or a list")


def _plain(value: Any) -> Any:
    # an ExprRV is an int that remembers its sampling step; the IR keeps the plain value
    if isinstance(value, list):
        return tuple(_plain(v) for v in value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


@schedule_primitive("annotate")
def annotate(ctx: Context, block_or_loop: Union[BlockRV, LoopRV], ann_key: str,
             ann_val: Any) -> None:
    """Attach ``ann_key = ann_val`` to a loop or block, for later passes (it changes no meaning).

        sch.annotate(i, "pragma_unroll_explicit", 16)
    """
    if not isinstance(ann_key, str) or not ann_key:
        raise AnnotationError(f"annotation key must be a non-empty str, got {ann_key!r}")
    _check_value(ann_key, ann_val)
    value = _plain(ann_val)
    node = ctx.stmt(block_or_loop)
    if isinstance(node, For):
        ann = dict(node.annotations)
        ann[ann_key] = value
        ctx.replace(node, For(node.loop_var, node.extent, node.body, node.kind, ann))
    else:
        ann = dict(node.block.annotations)
        ann[ann_key] = value
        ctx.replace(node.block, replace(node.block, annotations=ann))


@schedule_primitive("unannotate")
def unannotate(ctx: Context, block_or_loop: Union[BlockRV, LoopRV], ann_key: str) -> None:
    """Remove the annotation ``ann_key`` from a loop or block."""
    node = ctx.stmt(block_or_loop)
    target = node if isinstance(node, For) else node.block
    ann = dict(target.annotations)
    if ann_key not in ann:
        ctx.fail(AnnotationError, f"{'loop ' + node.loop_var.name if isinstance(node, For) else 'block ' + repr(node.block.name)} "
                 f"has no annotation {ann_key!r}.", f"its annotations are: {sorted(ann) or 'none'}.",
                 node)
    del ann[ann_key]
    if isinstance(node, For):
        ctx.replace(node, For(node.loop_var, node.extent, node.body, node.kind, ann))
    else:
        ctx.replace(node.block, replace(node.block, annotations=ann))
