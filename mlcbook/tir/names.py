"""Fresh names for buffers, blocks and loops that a pass or a primitive adds to a program.

    >>> taken = {"A", "A_1"}
    >>> fresh_name("A", taken), fresh_name("A", taken), fresh_name("B", taken)
    ('A_2', 'A_3', 'B')
"""

from __future__ import annotations

__all__ = ["fresh_name"]


def fresh_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... whichever is not in ``taken``; the name
    returned joins ``taken``, so repeated calls never hand out the same name twice."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name
