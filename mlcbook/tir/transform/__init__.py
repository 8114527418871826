"""Lowering passes: scheduled loop IR -> flat loops ready for code generation.

    >>> mb.lower(func)              # the whole pipeline; stages=True shows each step
"""

from .compact_allocations import compact_allocations
from .convert_blocks import convert_blocks
from .flatten_buffers import flatten_buffers
from .lower import is_lowered, lower

__all__ = ["convert_blocks", "compact_allocations", "flatten_buffers", "lower", "is_lowered"]
