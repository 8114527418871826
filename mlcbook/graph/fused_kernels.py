"""One PrimFunc per fusion group: the group's ops legalized into one tensor-expression graph
(each op's legalization reads the TE tensors of the ops before it instead of buffers), so
the group becomes one kernel whose intermediates are blocks of the same PrimFunc. The
default schedule then computes elementwise blocks inside their consumers
(``compute_inline``) and folds epilogues into the producer's tile write-back, so the
intermediates of a group never go to memory as whole tensors.

Each group's ``call_tir`` carries what the memory planner may do with it as attrs
(:func:`call_facts`): ``inplace=1`` when every op of the group is elementwise or broadcast,
``concat_axis=k`` when the group is one concat of distinct values.

    >>> mod = legalize_fused(func, fuse_ops(func))   # like legalize(), one call_tir a group
"""

from __future__ import annotations

from ..errors import LegalizeError, MLCError
from ..ops import get as get_op
from ..ops.legalize import scalar_free
from ..ops.registry import OpKind
from ..ops.types import Attrs, TensorType, storage_dtype
from ..tir.function import IRModule, PrimFunc
from .expr import Call, CallTIR, Expr, Function
from .fusion import FusionPlan, Group
from .interpret import main_function
from .legalize import Legalizer, func_name

_ARG_NAMES = "abcdefghijklmnopqrstuvwxyz"


def group_inputs(group: Group) -> list[Expr]:
    """The values a group reads from outside it, in first-use order, each once."""
    inside = {id(c) for c in group.calls}
    seen, out = set(), []
    for c in group.calls:
        for a in c.args:
            if id(a) not in inside and id(a) not in seen:
                seen.add(id(a))
                out.append(a)
    return out


def legalize_group(group: Group, name: str | None = None) -> PrimFunc:
    """The PrimFunc computing ``group`` (inputs: :func:`group_inputs`; then its output)."""
    from .. import te
    inputs = group_inputs(group)
    tensors: dict[int, object] = {}
    placeholders = []
    for k, a in enumerate(inputs):
        t = scalar_free(a.type)
        arg = _ARG_NAMES[k] if k < len(_ARG_NAMES) else f"arg{k}"
        placeholders.append(te.placeholder(t.shape, storage_dtype(t.dtype), name=arg))
        tensors[id(a)] = placeholders[-1]
    for c in group.calls:
        op = get_op(c.op)
        try:
            out = op.legalize([tensors[id(a)] for a in c.args], c.attrs, scalar_free(c.type))
        except MLCError as e:
            raise LegalizeError(f"cannot legalize {c.op} {c.name!r} inside the fused group "
                                f"{group.name!r}: {e.message}") from None
        if out.ndim == 0:  # a 0-d value lives in a (1,)-tensor, as everywhere in the graph
            out = te.ops.reshape(out, (1,), name=out.name)
        tensors[id(c)] = out
    out = tensors[id(group.output)]
    want = scalar_free(group.output.type)
    if not isinstance(want, TensorType) or out.shape != want.shape \
            or out.dtype != storage_dtype(want.dtype):
        raise LegalizeError(f"the fused group {group.name!r} computes {out.shape} {out.dtype} "
                            f"but its output's type is {want}")
    fname = name or "fused_" + "_".join(func_name(c) for c in group.calls)[:60]
    return te.create_prim_func(placeholders + [out], name=fname)


def call_facts(group: Group) -> Attrs:
    """What the memory planner may do with the call of ``group``'s kernel: ``inplace=1`` (out[i]
    needs only in[i]: the output may take the place of an input that dies there),
    ``concat_axis=k`` (one concat of distinct values: each may be written straight into its
    slice of the output)."""
    out = group.output
    facts = {}
    if group.kind <= OpKind.BROADCAST and all(get_op(c.op).kind <= OpKind.BROADCAST
                                              for c in group.calls):
        facts["inplace"] = 1
    if len(group.calls) == 1 and out.op == "concat" \
            and len({id(a) for a in out.args}) == len(out.args):
        facts["concat_axis"] = int(out.attrs["axis"])
    return Attrs(facts)


class _FusedLegalizer(Legalizer):
    def __init__(self, funcs: dict, plan: FusionPlan, keep=()):
        super().__init__(funcs, keep)
        self.plan = plan

    def visit_Call(self, call: Call):
        group = self.plan.group_of(call) if self.plan.has(call) else None
        if group is None:
            return super().visit_Call(call)
        if len(group.calls) == 1:
            out = super().visit_Call(call)
            if not isinstance(out, CallTIR):   # a view, or a constant (no elements)
                return out
            return CallTIR(out.func, out.args, out.out_type, out.name, call_facts(group))
        if call is not group.output:
            return call  # computed inside the group's kernel
        prim = legalize_group(group)
        args = tuple(self.new(a) for a in group_inputs(group))
        return CallTIR(self.add(prim), args, call.type, call.name, call_facts(group))


def legalize_fused(target, plan: FusionPlan, keep=()) -> IRModule:
    """Like :func:`mlcbook.graph.legalize`, with each group of ``plan`` one ``call_tir``."""
    func, mod = main_function(target)
    funcs = dict(mod.functions) if mod is not None else {}
    # the function keeps the key it has in the module ("main"), whatever its own name
    key = next((k for k, f in funcs.items() if f is func), func.name)
    funcs[key] = func
    funcs[key] = _FusedLegalizer(funcs, plan, keep).visit_function(func)
    return IRModule(funcs)


__all__ = ["group_inputs", "legalize_group", "legalize_fused", "call_facts"]
