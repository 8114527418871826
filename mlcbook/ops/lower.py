"""The legalizations of the registered ops: each maps the graph op's inputs and ONNX-style
attributes onto an operator of the library :mod:`mlcbook.te.ops`, which computes it.

    >>> get("resize").legalize        # te.ops.resize(x, sizes=..., scales=..., mode=..., ...)

Most ops are the te.ops operator of the same name, called with the op's inputs
positionally and its attributes as keywords; the rest have an adapter of their own below.
(A declared op's legalization is its compute: :mod:`.declare`.)
"""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization

#: the ops computed by the te.ops operator of the same name from the same inputs and attributes
_SAME = ("scatter_elements", "scatter_nd", "resize", "bitcast")


def _same(op: str):
    fn = getattr(T, op)

    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return fn(*ins, **attrs, name=op)
    return legalize


for _op in _SAME:
    _same(_op)


@register_legalization("gather")
def _gather(ins, attrs, out_type):
    # gather is declared from its compute (transform.py), but a 0-d index arrives as the (1,)
    # buffer it shares memory with, which the compute cannot tell from a (1,) index: only the
    # output type can, so it is read as 0-d here
    data, indices = ins
    if out_type.ndim == data.ndim - 1:
        indices = T.reshape(indices, (), name="index")
    return T.gather(data, indices, attrs["axis"], name="gather")
