"""``lower``: the pipeline from scheduled loop IR to the flat loops codegen compiles.

    >>> lowered = mb.lower(func)                     # an IRModule of lowered PrimFuncs
    >>> for name, mod in mb.lower(func, stages=True):
    ...     print(name); print(mod)                  # the program after each stage

Stages, in order:

1. ``convert_blocks`` — each block tensorized with ``sch.tensorize`` first gets its
   intrinsic's ``impl`` as body (:mod:`mlcbook.tir.tensor_intrin`), then blocks become plain
   statements (bindings substituted, predicates
   as ``if``, init hoisted or guarded, block allocations as ``Allocate``);
2. ``compact_allocations`` — each allocation moves into the loops whose iterations use
   disjoint parts of it, and shrinks to the part one iteration touches;
3. ``flatten_buffers`` — every buffer becomes one-dimensional;
4. ``simplify`` — index arithmetic and conditions simplified with the loop bounds, an
   innermost loop that tests its own variable cut where the tests change
   (:func:`~mlcbook.tir.transform.partition_loops.partition_loops`: a pad's border columns
   apart from its interior), loops of extent 1 removed.
"""

from __future__ import annotations

from typing import Union

from ...errors import BuildError
from ..function import IRModule, PrimFunc
from ..functor import Mutator
from ..simplify import simplify
from ..expr import Const
from ..stmt import Evaluate, For, SeqStmt, seq
from ..verify import verify
from .compact_allocations import compact_allocations
from .convert_blocks import convert_blocks
from ..tensor_intrin import place_intrinsics
from .flatten_buffers import flatten_buffers
from .partition_loops import partition_loops

#: attribute set on every PrimFunc that went through :func:`lower`
LOWERED = "lowered"


def lower(mod_or_func: Union[IRModule, PrimFunc], stages: bool = False):
    """Lower every PrimFunc of a module (or one PrimFunc) for code generation.

    Returns the lowered :class:`IRModule`, or with ``stages=True`` the list of
    ``(stage_name, IRModule)`` pairs, starting with ``("input", ...)``.
    """
    mod = _as_module(mod_or_func)
    history = [("input", mod)]
    for name, fn in _STAGES:
        mod = IRModule({k: fn(f) if _needs_lowering(f) else f for k, f in mod.items()})
        history.append((name, mod))
    mod = IRModule({k: _mark(f) if isinstance(f, PrimFunc) else f for k, f in mod.items()})
    history[-1] = (history[-1][0], mod)
    return history if stages else mod


def is_lowered(func) -> bool:
    return isinstance(func, PrimFunc) and dict(func.attrs).get(LOWERED, False) is True


def _as_module(x) -> IRModule:
    if isinstance(x, PrimFunc):
        if not is_lowered(x):
            verify(x)
        return IRModule({x.name: x})
    if isinstance(x, IRModule):
        for f in x.functions.values():
            if isinstance(f, PrimFunc) and not is_lowered(f):
                verify(f)
        return x
    raise BuildError(
        f"lower/build takes a PrimFunc or an IRModule, got {type(x).__name__}; build a "
        "PrimFunc with mb.te.create_prim_func or @T.prim_func first")


def _needs_lowering(f) -> bool:
    return isinstance(f, PrimFunc) and not is_lowered(f)


def _mark(f: PrimFunc) -> PrimFunc:
    if is_lowered(f):
        return f
    attrs = dict(f.attrs)
    attrs[LOWERED] = True
    return PrimFunc(f.name, f.params, f.body, f.num_outputs, attrs)


class _Cleanup(Mutator):
    """Drop loops of extent 1 (their variable is already 0 everywhere) and no-op statements."""

    def visit_For(self, s: For):
        body = self.visit(s.body)
        if isinstance(s.extent, Const) and s.extent.value == 1:
            return body
        return s if body is s.body else For(s.loop_var, s.extent, body, s.kind, s.annotations)

    def visit_SeqStmt(self, s: SeqStmt):
        stmts = [self.visit(x) for x in s.stmts]
        return seq(*(x for x in stmts if not _is_noop(x)))


def _is_noop(s) -> bool:
    return isinstance(s, Evaluate) and isinstance(s.value, Const)


def _simplify_stage(f: PrimFunc) -> PrimFunc:
    return f.with_body(_Cleanup().visit(partition_loops(simplify(f.body))))


_STAGES = (
    ("convert_blocks", lambda f: f.with_body(convert_blocks(place_intrinsics(f.body)))),
    ("compact_allocations", lambda f: f.with_body(compact_allocations(f.body))),
    ("flatten_buffers", flatten_buffers),
    ("simplify", _simplify_stage),
)
