"""Fresh names for buffers, blocks and loops that a pass or a primitive adds to a program.

    >>> taken = {"A", "A_1"}
    >>> fresh_name("A", taken), fresh_name("A", taken), fresh_name("B", taken)
    ('A_2', 'A_3', 'B')
    >>> numbered_names("ax", 3, {"ax1"})
    ['ax0', 'ax2', 'ax3']
"""

from __future__ import annotations

__all__ = ["fresh_name", "numbered_names"]


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... whichever is not in ``taken``; the name
    returned joins ``taken``, so repeated calls never hand out the same name twice."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def numbered_names(base: str, n: int, taken: set[str]) -> list[str]:
    """``n`` names ``base0``, ``base1``, ... skipping those in ``taken``; the names returned
    join ``taken``. New loops of a schedule step are named this way (``ax0``, ``ax1``)."""
    out, k = [], 0
    while len(out) < n:
        name = f"{base}{k}"
        if name not in taken:
            out.append(name)
            taken.add(name)
        k += 1
    return out
