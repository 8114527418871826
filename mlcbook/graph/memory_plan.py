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

    >>> mp = plan_memory(plan, inplace_steps={3})
    >>> mp.arena_bytes, mp.unplanned_bytes
    (1605632, 4014080)
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    root = {}
    for i, s in enumerate(plan.slots):
        r = i
        while plan.slots[r].kind == "view":
            r = plan.slots[r].ref
        root[i] = r
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


def plan_memory(plan, inplace_steps=frozenset()) -> MemoryPlan:
    """Offsets of every temp slot of ``plan`` in one arena (see the module docstring)."""
    life = lifetimes(plan)
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
            if k in inplace_steps:
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
    return MemoryPlan(offsets, arena.end, sum(size.values()), life, inplace)


def _same(plan, a: int, b: int) -> bool:
    sa, sb = plan.slots[a], plan.slots[b]
    return tuple(sa.shape) == tuple(sb.shape) and sa.dtype == sb.dtype


def plot_lifetimes(plan, mp: MemoryPlan, ax=None):
    """A matplotlib picture of the plan: each temp is a box from the step that writes it to
    the step that last reads it (x), at its bytes in the arena (y)."""
    import matplotlib.pyplot as plt
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
