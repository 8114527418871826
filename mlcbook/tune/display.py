"""How a tuning result shows itself in a notebook: its numbers and its curve.

    >>> result = mb.tune.tune(func, trials=32)
    >>> result            # in Jupyter: trials, best and default times, speed-up, the curve
"""

from __future__ import annotations

import html


def speedup(result) -> float | None:
    """The default schedule's time over the best found (>1: the tuned one is faster)."""
    if result is None or not result.best_seconds or not result.default_seconds:
        return None
    return result.default_seconds / result.best_seconds


def result_html(result) -> str:
    """The notebook display of a :class:`~.search.TuneResult`: its numbers and the curve of
    the best time found against trials, as an inline SVG (no plotting library needed)."""
    curve = result.curve()
    best = "-" if result.best_seconds is None else f"{result.best_seconds * 1e3:.4f} ms"
    default = "-" if result.default_seconds is None else f"{result.default_seconds * 1e3:.4f} ms"
    gain = speedup(result)
    head = (f"<div><b>TuneResult</b> {html.escape(result.func.name)}: {len(result.history)} "
            f"trials, best {best}, default {default}"
            + (f", speed-up {gain:.2f}x" if gain else "") + "</div>")
    points = [(k, s) for k, s in enumerate(curve) if s is not None]
    if len(points) < 2:
        return head
    w, h, pad = 360, 140, 8
    lo, hi = min(s for _, s in points), max(s for _, s in points)
    span = (hi - lo) or hi or 1.0
    xy = " ".join(f"{pad + k * (w - 2 * pad) / (len(curve) - 1):.1f},"
                  f"{pad + (hi - s) / span * (h - 2 * pad):.1f}" for k, s in points)
    return (head + f"<svg width='{w}' height='{h}' style='border:1px solid #ccc'>"
            f"<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='{xy}'/>"
            f"<text x='{pad}' y='{h - 2}' font-size='10'>best time so far by trial "
            f"({hi * 1e3:.3f} down to {lo * 1e3:.3f} ms)</text></svg>")


__all__ = ["speedup", "result_html"]
