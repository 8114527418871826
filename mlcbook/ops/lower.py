"""The legalizations of the registered ops: each maps the graph op's inputs and ONNX-style
attributes onto an operator of the library :mod:`mlcbook.te.ops`, which computes it.

    >>> get("conv").legalize          # te.ops.conv(x, w, [b], strides=..., pads=..., ...)

Most ops are the te.ops operator of the same name, called with the op's inputs
positionally and its attributes as keywords; the rest have an adapter of their own below.
(A declared op's legalization is its compute: :mod:`.declare`.)
"""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization

#: the ops computed by the te.ops operator of the same name from the same inputs and attributes
_SAME = ("cast", "batch_norm", "matmul", "gemm", "conv", "max_pool", "avg_pool",
         "global_avg_pool", "conv_transpose",
         "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "resize",
         "max_pool_indices", "bitcast")


def _same(op: str):
    fn = getattr(T, op)

    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return fn(*ins, **attrs, name=op)
    return legalize


for _op in _SAME:
    _same(_op)


@register_legalization("layer_norm")
def _layer_norm(ins, attrs, out_type):
    return T.layer_norm(*ins, axis=attrs["axis"], epsilon=attrs["epsilon"],
                        return_stats=attrs["num_outputs"] == 3, name="layer_norm")


def _reshape(op: str):
    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        # the op's type already resolved 0, -1, axes...: only the target shape matters
        return T.reshape(ins[0], out_type.shape, name=op)
    return legalize


for _op in ("reshape", "flatten", "squeeze", "unsqueeze"):
    _reshape(_op)


@register_legalization("concat")
def _concat(ins, attrs, out_type):
    return T.concat(ins, attrs["axis"], name="concat")


@register_legalization("split")
def _split(ins, attrs, out_type):
    axis = attrs["axis"] % ins[0].ndim
    return T.split(ins[0], [t.shape[axis] for t in out_type.fields], axis, name="split")


@register_legalization("gather")
def _gather(ins, attrs, out_type):
    data, indices = ins
    if out_type.ndim == data.ndim - 1:
        # a 0-d index arrives as the (1,) buffer it shares memory with: read it as 0-d
        indices = T.reshape(indices, (), name="index")
    return T.gather(data, indices, attrs["axis"], name="gather")
