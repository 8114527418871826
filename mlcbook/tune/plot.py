"""The tuning curve: best GFLOP/s found against trials, one line per search (and seed band).

    >>> fig = plot_curves({"xgboost": [r.gflops_curve() for r in runs_x],
    ...                    "random": [r.gflops_curve() for r in runs_r]}, title="matmul 256")
    >>> fig.savefig("curve.png")
"""

from __future__ import annotations

import numpy as np

from ..optional import require


def plot_curves(curves: dict, title: str = "", ax=None):
    """Plot ``{label: [curve, ...]}`` (each curve: best GFLOP/s after each trial): the median
    over the curves of a label as a line, their min..max as a band; returns the figure."""
    plt = require("matplotlib.pyplot", "plot_curves")
    if ax is None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
    else:
        fig = ax.figure
    for label, runs in curves.items():
        n = min(len(c) for c in runs)
        a = np.array([c[:n] for c in runs], float)
        x = np.arange(1, n + 1)
        line, = ax.plot(x, np.median(a, axis=0), label=f"{label} (median of {len(runs)})")
        if len(runs) > 1:
            ax.fill_between(x, a.min(axis=0), a.max(axis=0), alpha=0.2, color=line.get_color())
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s so far")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    return fig


__all__ = ["plot_curves"]
