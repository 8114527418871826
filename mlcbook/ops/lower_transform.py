"""Legalizations of the data-movement ops: thin adapters from ONNX-style attributes to
:mod:`mlcbook.te.ops` (every output element is one input element, or a padding value)."""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization


def _reshape_adapter(op):
    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        # the op's type already resolved 0, -1, axes...: only the target shape matters
        return T.reshape(ins[0], out_type.shape, name=op)
    return legalize


for _op in ("reshape", "flatten", "squeeze", "unsqueeze"):
    _reshape_adapter(_op)


@register_legalization("transpose")
def _transpose(ins, attrs, out_type):
    return T.transpose(ins[0], attrs.get("perm"), name="transpose")


@register_legalization("concat")
def _concat(ins, attrs, out_type):
    return T.concat(ins, attrs["axis"], name="concat")


@register_legalization("split")
def _split(ins, attrs, out_type):
    return T.split(ins[0], [t.shape[attrs["axis"] % ins[0].ndim] for t in out_type.fields],
                   attrs["axis"], name="split")


@register_legalization("slice")
def _slice(ins, attrs, out_type):
    return T.slice(ins[0], attrs["starts"], attrs["ends"], attrs.get("axes"), attrs.get("steps"),
                   name="slice")


@register_legalization("gather")
def _gather(ins, attrs, out_type):
    return T.gather(ins[0], ins[1], attrs["axis"], name="gather")


@register_legalization("pad")
def _pad(ins, attrs, out_type):
    x, pads = ins[0], attrs["pads"]
    widths = [(pads[d], pads[x.ndim + d]) for d in range(x.ndim)]
    return T.pad(x, widths, attrs["value"], attrs["mode"], name="pad")
