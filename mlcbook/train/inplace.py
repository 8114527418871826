"""In-place updates for a compiled training step: the buffer that receives a parameter's
(or a state tensor's) next value *is* the buffer that holds its current value.

    >>> exe = mb.compile(step_function)                 # returns (loss, new w, new m, ...)
    >>> exe = update_in_place(exe, {1: "w", 2: "w.m"})  # output 1 overwrites input w, ...
    >>> exe.run(inputs)                                  # -> loss; w and w.m changed in place

The output slot becomes a view of the input's buffer, and the kernel calls are reordered so
that every kernel reading the old value runs before the one writing the new value (the
writer itself must be elementwise: the step builder checks that on the graph).
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Mapping

from ..errors import TrainingError
from ..graph.executable import Executable, Plan
from ..graph.memory_plan import plan_memory


def _root(slots, i: int) -> int:
    while slots[i].kind == "view":
        i = slots[i].ref
    return i


def update_in_place(exe: Executable, aliases: Mapping[int, str],
                    keep_outputs: tuple[int, ...] = (0,)) -> Executable:
    """An executable like ``exe`` whose outputs ``aliases`` (output index -> input name) are
    written into the arrays passed for those inputs; it returns only ``keep_outputs``."""
    plan = exe.plan
    slots = list(plan.slots)
    input_slot = {plan.inputs[s.ref][0]: i for i, s in enumerate(slots) if s.kind == "input"}
    first_use: dict[int, int] = {}
    for k, (_, args) in enumerate(plan.steps):
        for a in args:
            first_use.setdefault(_root(slots, a), k)
    readers_of = {}
    for k, (_, args) in enumerate(plan.steps):
        for a in args:
            readers_of.setdefault(_root(slots, a), set()).add(k)
    edges: dict[int, set[int]] = {k: set() for k in range(len(plan.steps))}
    for k, (_, args) in enumerate(plan.steps):      # read after write
        for a in args:
            r = _root(slots, a)
            if slots[r].kind == "temp" and first_use[r] != k:
                edges[first_use[r]].add(k)
    for out_index, name in aliases.items():
        o = plan.outputs[out_index]
        if slots[o].kind != "temp" or name not in input_slot:
            raise TrainingError(f"update_in_place: output {out_index} is not a computed value "
                                f"or {name!r} is not an input; cannot update it in place")
        a = input_slot[name]
        if (slots[o].shape, slots[o].dtype) != (slots[a].shape, slots[a].dtype):
            raise TrainingError(f"update_in_place: output {out_index} {slots[o].shape} does "
                                f"not match input {name!r} {slots[a].shape}")
        writer = first_use[o]
        for r in readers_of.get(a, ()):             # write after read
            if r != writer:
                edges[r].add(writer)
        slots[o] = replace(slots[o], kind="view", ref=a)
    order = _topological(edges)
    steps = [plan.steps[k] for k in order]
    outputs = [plan.outputs[i] for i in keep_outputs]
    new = Plan(plan.inputs, slots, steps, outputs, len(outputs) > 1)
    if plan.offsets:
        # the arena was planned for the old order of steps: plan it again for the new one
        mp = plan_memory(new)
        new.offsets, new.arena_bytes = mp.offsets, mp.arena_bytes
    return Executable(new, exe.kernels, exe.constants, exe.stats)


def _topological(edges: dict[int, set[int]]) -> list[int]:
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
        raise TrainingError("update_in_place: a value is read after its in-place update "
                            "and needed before it; the step cannot update in place")
    return order


__all__ = ["update_in_place"]
