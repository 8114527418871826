"""Static memory planning: every intermediate of a compiled model gets a place in one arena,
and two intermediates share bytes when their lifetimes do not overlap.

The plan of an :class:`~mlcbook.graph.Executable` is a list of kernel calls on slots. A
*temp* slot is live from the step that writes it to the last step that reads it (or a view
of it); the model's outputs live to the end. Walking the steps in order, the planner frees
the slots that died before the step and places the step's outputs with **best fit**: the
smallest free block that holds the output, else new bytes at the end of the arena. Best fit
keeps big blocks whole for big tensors, and in a network whose activations grow and shrink
it finds room in what earlier layers left; the sizes of one network are few, so size classes
would waste more than they save.

**In place**: a step whose kernel is elementwise (out[i] needs only in[i]) may write its
output over an input that dies at that step, when both have the same shape and dtype.

**Concatenation without copies**: when the slices of a concat's output are contiguous (all
axes before the concat axis have extent 1, e.g. the channels of a batch-1 NCHW or NCHW16c
tensor) and every input is an intermediate of its own, each input's producer can write
straight into its slice: :func:`elide_concats` drops the concat step, and the planner
places the output once, for the whole life of it and its inputs, with each input at its
slice's offset (the branches of an Inception module never leave the output they are
concatenated into).

    >>> plan, kept, parts = elide_concats(plan, {5: 1})   # step 5 concatenates on axis 1
    >>> mp = plan_memory(plan, inplace_steps={3}, parts=parts)
    >>> mp.arena_bytes, mp.unplanned_bytes
    (1605632, 4014080)

``mb.compile`` runs them as steps from a plan to a plan (:func:`elide_concat_steps`,
:func:`place_in_arena`), which read what they may do from the facts of each step's
``call_tir`` (``concat_axis``, ``inplace``; see :func:`mlcbook.graph.fused_kernels.call_facts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

#: offsets are multiples of this (a cache line, and the widest vector load)
ALIGN = 64


def _nbytes(shape, dtype) -> int:
    n = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
    return max(ALIGN, -(-n // ALIGN) * ALIGN)


@dataclass
class MemoryPlan:
    """Where each temp slot lives in the arena, and the figures of the plan."""

    offsets: dict[int, int]                  #: temp slot -> byte offset in the arena
    arena_bytes: int                         #: size of the arena
    unplanned_bytes: int                     #: the temps with a buffer each
    lifetimes: dict[int, tuple[int, int]] = field(default_factory=dict)  #: slot -> steps
    inplace: list[tuple[int, int]] = field(default_factory=list)  #: (step, slot reused)


def lifetimes(plan) -> dict[int, tuple[int, int]]:
    """For every temp slot of ``plan``: (step that writes it, last step that reads it)."""
    root = {i: _root(plan, i) for i in range(len(plan.slots))}
    life: dict[int, list[int]] = {}
    for k, (_, args) in enumerate(plan.steps):
        for a in args:
            r = root[a]
            if plan.slots[r].kind == "temp":
                life.setdefault(r, [k, k])[1] = k
    end = len(plan.steps)
    for o in plan.outputs:
        if root[o] in life:
            life[root[o]][1] = end
    return {s: (a, b) for s, (a, b) in life.items()}


class _Arena:
    def __init__(self):
        self.free: list[tuple[int, int]] = []   # (offset, size), sorted by offset
        self.end = 0

    def take(self, size: int) -> int:
        fits = [(sz, off) for off, sz in self.free if sz >= size]
        if fits:
            sz, off = min(fits)
            self.free.remove((off, sz))
            if sz > size:
                self._give(off + size, sz - size)
            return off
        if self.free and self.free[-1][0] + self.free[-1][1] == self.end:
            off, sz = self.free.pop()  # extend the last free block instead of leaving a gap
            self.end = off + size
            return off
        off, self.end = self.end, self.end + size
        return off

    def _give(self, off: int, size: int) -> None:
        self.free.append((off, size))
        self.free.sort()
        merged = []
        for o, s in self.free:
            if merged and merged[-1][0] + merged[-1][1] == o:
                merged[-1] = (merged[-1][0], merged[-1][1] + s)
            else:
                merged.append((o, s))
        self.free = merged

    def give(self, off: int, size: int) -> None:
        self._give(off, size)


def elide_concats(plan, concats: Mapping[int, int] | None = None):
    """``plan`` without the concat steps whose inputs can be written in place into their
    output (``concats``: step -> concat axis, steps whose kernel is one concat of distinct
    values; default: the steps whose facts have a ``concat_axis``): ``(new plan, old index
    of each kept step, {input slot: (output slot, byte offset)})``. A concat stays a step
    when a slice is not contiguous or not 64-byte aligned, when an input is not an
    intermediate written by a step (a model input, a weight, a view), when an input is also
    concatenated elsewhere, or when a step passes the output and one of its inputs together
    (they would overlap)."""
    if concats is None:
        concats = {k: f["concat_axis"] for k, f in enumerate(plan.facts) if "concat_axis" in f}
    producer = {}   # slot -> the step that writes it: the first to touch it
    for k, (_, args) in enumerate(plan.steps):
        for a in args:
            producer.setdefault(a, k)
    parts: dict[int, tuple[int, int]] = {}
    dropped = set()
    for k, axis in sorted(concats.items()):
        found = _slices(plan, k, axis, producer)
        if found is None or any(p in parts for p in found):
            continue
        out = plan.steps[k][1][-1]
        if any(out in args and any(p in args for p in found)
               for j, (_, args) in enumerate(plan.steps) if j != k):
            continue
        parts.update({p: (out, off) for p, off in found.items()})
        dropped.add(k)
    kept = [k for k in range(len(plan.steps)) if k not in dropped]
    new_index = {old: new for new, old in enumerate(kept)}
    checks = [(new_index[c[0]], *c[1:]) for c in plan.checks]
    facts = [plan.facts[k] for k in kept] if plan.facts else []
    return (replace(plan, steps=[plan.steps[k] for k in kept], checks=checks, facts=facts,
                    parts={**plan.parts, **parts}), kept, parts)


def elide_concat_steps(plan):
    """The step of ``mb.compile``: ``plan`` without the concats :func:`elide_concats` can
    drop, their inputs recorded as parts of their outputs (``plan.parts``)."""
    return elide_concats(plan)[0]


def place_in_arena(plan):
    """The step of ``mb.compile``: ``plan`` with every temp placed in one arena
    (:func:`plan_memory`), a step whose facts say ``inplace`` writing over an input that
    dies there, the parts of an elided concat inside its output."""
    inplace = {k for k, f in enumerate(plan.facts) if f.get("inplace")}
    mp = plan_memory(plan, inplace, plan.parts)
    return replace(plan, offsets=mp.offsets, arena_bytes=mp.arena_bytes)


def _slices(plan, step: int, axis: int, producer) -> dict[int, int] | None:
    """{input slot: byte offset in the output} of concat step ``step``, or None when its
    inputs cannot be its output's slices (see :func:`elide_concats`)."""
    args = plan.steps[step][1]
    ins, out = args[:-1], plan.slots[args[-1]]
    axis %= len(out.shape)
    if plan.slots[args[-1]].kind != "temp" or math.prod(out.shape[:axis]) != 1 \
            or len(set(ins)) != len(ins):
        return None
    found, off = {}, 0
    for a in ins:
        s = plan.slots[a]
        if s.kind != "temp" or producer.get(a, step) >= step or s.dtype != out.dtype \
                or off % ALIGN or len(s.shape) != len(out.shape) \
                or any(d != e for i, (d, e) in enumerate(zip(s.shape, out.shape)) if i != axis):
            return None
        found[a] = off
        off += s.nbytes
    return found if off == out.nbytes else None


def plan_memory(plan, inplace_steps=frozenset(),
                parts: Mapping[int, tuple[int, int]] | None = None) -> MemoryPlan:
    """Offsets of every temp slot of ``plan`` in one arena (see the module docstring);
    ``parts``: slots that live inside another, ``{slot: (owner slot, byte offset)}`` (from
    :func:`elide_concats`)."""
    parts = _resolved(parts or {})
    life = lifetimes(plan)
    for p, (owner, _) in parts.items():
        if p in life:   # the owner lives from its first part's write to its last read
            a, b = life.pop(p)
            first, last = life.get(owner, (a, b))
            life[owner] = (min(a, first), max(b, last))
    owners = {owner for owner, _ in parts.values()}
    for o in plan.outputs:   # a model output no kept step reads still lives to the end
        r = _root(plan, o)
        owner = parts[r][0] if r in parts else r
        if owner in owners:
            life[owner] = (life[owner][0], len(plan.steps))
    size = {s: _nbytes(plan.slots[s].shape, plan.slots[s].dtype) for s in life}
    by_step: dict[int, list[int]] = {}
    for s, (first, _) in life.items():
        by_step.setdefault(first, []).append(s)
    dies: dict[int, list[int]] = {}
    for s, (_, last) in life.items():
        dies.setdefault(last, []).append(s)
    arena, offsets, inplace = _Arena(), {}, []
    for k, (_, args) in enumerate(plan.steps):
        outs = by_step.get(k, [])
        dying = [s for s in dies.get(k, []) if s not in outs]
        for s in outs:
            reuse = None
            if k in inplace_steps and s not in owners:
                reuse = next((d for d in dying if _same(plan, d, s)), None)
            if reuse is not None:
                dying.remove(reuse)
                offsets[s] = offsets[reuse]
                inplace.append((k, reuse))
            else:
                offsets[s] = arena.take(size[s])
        for s in dying:
            arena.give(offsets[s], size[s])
        for s in outs:  # an output nothing reads dies at once
            if life[s][1] == k:
                arena.give(offsets[s], size[s])
    for p, (owner, off) in parts.items():
        offsets[p] = offsets[owner] + off
    return MemoryPlan(offsets, arena.end, sum(size.values()), life, inplace)


def _resolved(parts: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """``parts`` with each owner that is itself a part of another slot (a concat elided into
    a concat, as in a DenseNet block) replaced by the slot that owns it in the end, offsets
    added: only slots that are no part get a place in the arena.

        >>> _resolved({1: (2, 64), 2: (3, 128)})
        {1: (3, 192), 2: (3, 128)}
    """
    out = {}
    for p, (owner, off) in parts.items():
        seen = {p}
        while owner in parts:
            if owner in seen:
                raise ValueError(f"slots {sorted(seen)} are parts of each other")
            seen.add(owner)
            owner, more = parts[owner]
            off += more
        out[p] = (owner, off)
    return out


def _root(plan, slot: int) -> int:
    """The slot that holds the bytes of ``slot``, seen through views."""
    while plan.slots[slot].kind == "view":
        slot = plan.slots[slot].ref
    return slot


def _same(plan, a: int, b: int) -> bool:
    sa, sb = plan.slots[a], plan.slots[b]
    return tuple(sa.shape) == tuple(sb.shape) and sa.dtype == sb.dtype


def plot_lifetimes(plan, mp: MemoryPlan, ax=None):
    """A matplotlib picture of the plan: each temp is a box from the step that writes it to
    the step that last reads it (x), at its bytes in the arena (y)."""
    from ...optional import require
    plt = require("matplotlib.pyplot", "the memory plan's picture")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4))
    names = {}
    for k, (kernel, args) in enumerate(plan.steps):
        for a in args:
            names.setdefault(a, kernel)
    for s, (first, last) in sorted(mp.lifetimes.items()):
        sz = _nbytes(plan.slots[s].shape, plan.slots[s].dtype)
        ax.add_patch(plt.Rectangle((first - 0.4, mp.offsets[s] / 1024), last - first + 0.8,
                                   sz / 1024, alpha=0.6, edgecolor="black"))
    ax.set_xlim(-1, len(plan.steps) + 1)
    ax.set_ylim(0, max(mp.arena_bytes, 1) / 1024 * 1.05)
    ax.set_xlabel("step (kernel call)")
    ax.set_ylabel("arena offset (KiB)")
    ax.set_title(f"arena {mp.arena_bytes / 1024:.0f} KiB vs one buffer each "
                 f"{mp.unplanned_bytes / 1024:.0f} KiB")
    return ax
