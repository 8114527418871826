"""Outputs written over inputs: a function declares that an output is the next value of one of
its inputs (a training step's new weights, its optimizer's new state), and the planner makes
that output's slot the input's buffer, so a run updates the caller's array in place.

    >>> step = with_output_aliases(step, {1: "w", 2: "w.m"})   # output 1 is the new w, ...
    >>> exe = mb.compile(step)                                  # returns output 0 only
    >>> exe.run(inputs)                                         # w and w.m changed in place

The planner orders the kernel calls so that every call reading the old value runs before the
one writing the new value, and plans the arena for that order. The writer must not read
anything else of the input's buffer after writing into it: it must be elementwise (a training
step's builder checks that on the graph).
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Mapping

from ...errors import GraphError
from ...ops.types import Attrs
from ..expr import Function

#: the attr of a graph function that declares its aliases: ``((output, input name), ...)``
OUTPUT_ALIASES = "output_aliases"


def with_output_aliases(func: Function, aliases: Mapping[int, str]) -> Function:
    """``func`` declaring that its output ``k`` is the next value of its input
    ``aliases[k]``: the compiled function writes that output into the array passed for the
    input and returns only the other outputs."""
    pairs = tuple(sorted((int(k), str(v)) for k, v in aliases.items()))
    return replace(func, attrs=Attrs(dict(func.attrs, **{OUTPUT_ALIASES: pairs})))


def declared_aliases(func: Function) -> dict[int, str]:
    """The aliases ``func`` declares (:func:`with_output_aliases`): {output: input name}."""
    return dict(func.attrs.get(OUTPUT_ALIASES, ()))


def alias_outputs(plan, aliases: Mapping[int, str] | None = None):
    """``plan`` with each output ``k`` of ``aliases`` (default: ``plan.aliases``) a view of
    the buffer of input ``aliases[k]`` and no longer returned, its steps in an order where
    every step reading an input's old value runs before the step writing its new one."""
    aliases = plan.aliases if aliases is None else aliases
    if not aliases:
        return plan
    slots = list(plan.slots)
    input_slot = {plan.inputs[s.ref][0]: i for i, s in enumerate(slots) if s.kind == "input"}
    first_use, readers = {}, {}
    for k, (_, args) in enumerate(plan.steps):
        for a in args:
            r = plan.root(a)
            first_use.setdefault(r, k)
            readers.setdefault(r, set()).add(k)
    edges: dict[int, set[int]] = {k: set() for k in range(len(plan.steps))}
    for k, (_, args) in enumerate(plan.steps):      # read after write
        for a in args:
            r = plan.root(a)
            if slots[r].kind == "temp" and first_use[r] != k:
                edges[first_use[r]].add(k)
    for out, name in sorted(aliases.items()):
        _check_alias(plan, out, name, input_slot)
        o, a = plan.outputs[out], input_slot[name]
        writer = first_use[o]
        for r in readers.get(a, ()):                 # write after read
            if r != writer:
                edges[r].add(writer)
        slots[o] = replace(slots[o], kind="view", ref=a)
    order = _topological(edges, aliases)
    new_index = {old: new for new, old in enumerate(order)}
    kept = [k for k in range(len(plan.outputs)) if k not in aliases]
    return replace(plan, slots=slots, steps=[plan.steps[k] for k in order],
                   facts=[plan.facts[k] for k in order] if plan.facts else [],
                   checks=[(new_index[c[0]], *c[1:]) for c in plan.checks],
                   outputs=[plan.outputs[k] for k in kept], tuple_output=len(kept) > 1,
                   output_names=[plan.output_names[k] for k in kept] if plan.output_names
                   else [], aliases={})


def _check_alias(plan, out: int, name: str, input_slot: dict) -> None:
    if not 0 <= out < len(plan.outputs):
        raise GraphError(f"output {out} is declared to update input {name!r}, but the "
                         f"function has {len(plan.outputs)} outputs; Instead: name an output "
                         f"index from 0 to {len(plan.outputs) - 1}")
    if name not in input_slot:
        raise GraphError(f"output {out} is declared to update input {name!r}, which is not an "
                         f"input of the function (inputs: {', '.join(input_slot)}); Instead: "
                         "name one of its inputs")
    o, a = plan.outputs[out], input_slot[name]
    if plan.slots[o].kind != "temp" or o in plan.outputs[:out] + plan.outputs[out + 1:]:
        raise GraphError(f"output {out} cannot update input {name!r} in place: it is not a "
                         "value a kernel computes for it alone (an input, a weight, a view or "
                         "another output); Instead: update only outputs a kernel writes")
    so, sa = plan.slots[o], plan.slots[a]
    if (tuple(so.shape), so.dtype) != (tuple(sa.shape), sa.dtype):
        raise GraphError(f"output {out} {tuple(so.shape)} {so.dtype} cannot update input "
                         f"{name!r} {tuple(sa.shape)} {sa.dtype} in place; Instead: alias an "
                         "output of the input's shape and dtype")


def _topological(edges: dict[int, set[int]], aliases) -> list[int]:
    """Kahn's order, keeping the original order where the edges allow it."""
    indeg = {k: 0 for k in edges}
    for succ in edges.values():
        for s in succ:
            indeg[s] += 1
    ready = [k for k, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for s in edges[k]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, s)
    if len(order) != len(edges):
        raise GraphError(f"the outputs {sorted(aliases)} cannot update their inputs in place: "
                         "an input's old value is read after a step that needs its new one; "
                         "Instead: return the new value as an output of its own")
    return order


__all__ = ["OUTPUT_ALIASES", "with_output_aliases", "declared_aliases", "alias_outputs"]
