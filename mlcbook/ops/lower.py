"""The legalizations of the registered ops: each maps the graph op's inputs and ONNX-style
attributes onto an operator of the library :mod:`mlcbook.te.ops`, which computes it.

    >>> get("conv").legalize          # te.ops.conv(x, w, [b], strides=..., pads=..., ...)

Most ops take their inputs positionally and their attributes as keywords of the same name
(``_RENAMED`` lists where te.ops spells one differently); the rest have an adapter of
their own below.
"""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization

#: graph op -> the te.ops operator computing it from the same inputs and attributes
_SAME = {
    "neg": T.negative, "abs": T.abs, "exp": T.exp, "log": T.log, "sqrt": T.sqrt,
    "reciprocal": T.reciprocal, "relu": T.relu, "sigmoid": T.sigmoid, "tanh": T.tanh,
    "erf": T.erf, "leaky_relu": T.leaky_relu, "gelu": T.gelu, "clip": T.clip, "cast": T.cast,
    "add": T.add, "sub": T.subtract, "mul": T.multiply, "maximum": T.maximum,
    "minimum": T.minimum, "equal": T.equal, "less": T.less, "greater": T.greater,
    "pow": T.power, "where": T.where, "batch_norm": T.batch_norm,
    "matmul": T.matmul, "gemm": T.gemm, "conv": T.conv, "max_pool": T.max_pool,
    "avg_pool": T.avg_pool, "global_avg_pool": T.global_avg_pool, "softmax": T.softmax,
    "log_softmax": T.log_softmax, "sum": T.reduce_sum, "mean": T.reduce_mean,
    "max": T.reduce_max, "min": T.reduce_min, "transpose": T.transpose, "slice": T.slice,
    "gather": T.gather,
}
#: op -> {attribute: te.ops parameter} where the two spell it differently
_RENAMED = {"clip": {"min": "a_min", "max": "a_max"}, "transpose": {"perm": "axes"},
            **{r: {"axes": "axis"} for r in ("sum", "mean", "max", "min")}}


def _same(op: str, fn):
    renamed = _RENAMED.get(op, {})

    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return fn(*ins, **{renamed.get(k, k): v for k, v in attrs.items()}, name=op)
    return legalize


for _op, _fn in _SAME.items():
    _same(_op, _fn)


@register_legalization("div")
def _div(ins, attrs, out_type):
    fn = T.divide if ins[0].dtype.startswith("float") else T.trunc_divide
    return fn(*ins, name="div")


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


@register_legalization("pad")
def _pad(ins, attrs, out_type):
    x, pads = ins[0], attrs["pads"]
    widths = [(pads[d], pads[x.ndim + d]) for d in range(x.ndim)]
    return T.pad(x, widths, attrs["value"], attrs["mode"], name="pad")
