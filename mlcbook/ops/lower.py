"""The legalizations written by hand: a declared op's legalization is its compute
(:mod:`.declare`); the ops below adapt their inputs first.

    >>> get("gather").legalize        # a 0-d index read as 0-d, then te.ops.gather
"""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization


@register_legalization("gather")
def _gather(ins, attrs, out_type):
    # gather is declared from its compute (transform.py), but a 0-d index arrives as the (1,)
    # buffer it shares memory with, which the compute cannot tell from a (1,) index: only the
    # output type can, so it is read as 0-d here
    data, indices = ins
    if out_type.ndim == data.ndim - 1:
        indices = T.reshape(indices, (), name="index")
    return T.gather(data, indices, attrs["axis"], name="gather")
