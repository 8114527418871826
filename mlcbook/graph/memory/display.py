"""How a run plan shows itself in a notebook: the lifetimes figure, as an inline SVG (no
plotting library needed). Each intermediate is a box from the step that writes it to the
last step that reads it (x), at its bytes in the arena (y); hovering a box names it.

    >>> exe.plan          # in Jupyter: calls, arena vs one buffer each, the figure
"""

from __future__ import annotations

import html

from .memory_plan import ALIGN, lifetimes

#: box colours, one per kernel of the writing step (matplotlib's default cycle)
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
WIDTH, HEIGHT, PAD = 560, 200, 28


def _kib(nbytes: int) -> str:
    return f"{nbytes / 1024:.1f} KiB"


def _bytes(plan, s: int) -> int:
    """Slot ``s``'s bytes as the planner counts them: whole lines of ``ALIGN``."""
    return max(ALIGN, -(-plan.slots[s].nbytes // ALIGN) * ALIGN)


def peak_live_bytes(plan, life) -> int:
    """The most bytes of intermediates live at one step: a bound no placement beats."""
    return max((sum(_bytes(plan, s) for s, (a, b) in life.items() if a <= k <= b)
                for k in range(len(plan.steps) + 1)), default=0)


def plan_html(plan) -> str:
    """The notebook display of a :class:`~.plan.Plan`: its figures and, when its memory is
    planned, the lifetimes figure of its intermediates in the arena.

        >>> "<svg" in plan_html(mb.compile(mod).plan)
        True
    """
    life = lifetimes(plan)
    unplanned = sum(_bytes(plan, s) for s in life)
    head = (f"<div><b>Plan</b>: {len(plan.steps)} kernel calls, {len(life)} intermediates; "
            f"one buffer each {_kib(unplanned)}, the most live at one step "
            f"{_kib(peak_live_bytes(plan, life))}")
    if not plan.offsets or not life:
        return head + "; memory not planned (opt_level 2 and up plan it)</div>"
    head += f", arena {_kib(plan.arena_bytes)}</div>"
    return head + _figure(plan, life)


def _figure(plan, life) -> str:
    steps, top = max(len(plan.steps), 1), max(plan.arena_bytes, 1)
    sx, sy = (WIDTH - 2 * PAD) / (steps + 1), (HEIGHT - 2 * PAD) / top
    writer = {}
    for k, (kernel, args) in enumerate(plan.steps):
        for a in args:
            writer.setdefault(a, kernel)
    colour = {k: COLOURS[i % len(COLOURS)] for i, k in enumerate(dict.fromkeys(writer.values()))}
    boxes = []
    for s, (first, last) in sorted(life.items()):
        slot, at = plan.slots[s], plan.offsets.get(s)
        if at is None:
            continue
        x, w = PAD + (first + 0.1) * sx, (last - first + 0.8) * sx
        y, h = HEIGHT - PAD - (at + slot.nbytes) * sy, max(slot.nbytes * sy, 1.0)
        tip = html.escape(f"slot {s}: {tuple(slot.shape)} {slot.dtype}, {_kib(slot.nbytes)} at "
                          f"{_kib(at)}, steps {first}-{last}, written by "
                          f"{writer.get(s, '?')}")
        boxes.append(f"<rect x='{x:.1f}' y='{y:.1f}' width='{w:.1f}' height='{h:.1f}' "
                     f"fill='{colour.get(writer.get(s), COLOURS[0])}' fill-opacity='0.6' "
                     f"stroke='black' stroke-width='0.5'><title>{tip}</title></rect>")
    axes = (f"<line x1='{PAD}' y1='{HEIGHT - PAD}' x2='{WIDTH - PAD}' y2='{HEIGHT - PAD}' "
            f"stroke='black'/><line x1='{PAD}' y1='{PAD}' x2='{PAD}' y2='{HEIGHT - PAD}' "
            f"stroke='black'/>"
            f"<text x='{WIDTH / 2:.0f}' y='{HEIGHT - 8}' font-size='11' text-anchor='middle'>"
            f"step (kernel call), 0 to {len(plan.steps) - 1}</text>"
            f"<text x='{PAD}' y='{PAD - 8}' font-size='11'>arena offset, 0 to "
            f"{_kib(plan.arena_bytes)}</text>")
    return (f"<svg width='{WIDTH}' height='{HEIGHT}' style='border:1px solid #ccc'>"
            + axes + "".join(boxes) + "</svg>")


__all__ = ["plan_html", "peak_live_bytes"]
