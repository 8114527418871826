"""Legalizations of the elementwise and broadcasting ops (and batch_norm, which is one):
thin adapters from the graph op's inputs and attributes to :mod:`mlcbook.te.ops`."""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization

#: graph op -> te.ops operator taking the same inputs and no attributes
_SAME_INPUTS = {
    "neg": T.negative, "abs": T.abs, "exp": T.exp, "log": T.log, "sqrt": T.sqrt,
    "reciprocal": T.reciprocal, "relu": T.relu, "sigmoid": T.sigmoid, "tanh": T.tanh,
    "erf": T.erf, "add": T.add, "sub": T.subtract, "mul": T.multiply, "maximum": T.maximum,
    "minimum": T.minimum, "equal": T.equal, "less": T.less, "greater": T.greater,
    "pow": T.power, "where": T.where,
}


def _adapter(op, fn):
    @register_legalization(op)
    def legalize(ins, attrs, out_type):
        return fn(*ins, name=op)
    return legalize


for _op, _fn in _SAME_INPUTS.items():
    _adapter(_op, _fn)


@register_legalization("div")
def _div(ins, attrs, out_type):
    fn = T.divide if ins[0].dtype.startswith("float") else T.trunc_divide
    return fn(*ins, name="div")


@register_legalization("leaky_relu")
def _leaky_relu(ins, attrs, out_type):
    return T.leaky_relu(ins[0], attrs["alpha"], name="leaky_relu")


@register_legalization("gelu")
def _gelu(ins, attrs, out_type):
    return T.gelu(ins[0], attrs["approximate"], name="gelu")


@register_legalization("clip")
def _clip(ins, attrs, out_type):
    return T.clip(ins[0], attrs.get("min"), attrs.get("max"), name="clip")


@register_legalization("cast")
def _cast(ins, attrs, out_type):
    return T.cast(ins[0], out_type.dtype, name="cast")


@register_legalization("batch_norm")
def _batch_norm(ins, attrs, out_type):
    return T.batch_norm(*ins, epsilon=attrs["epsilon"], name="batch_norm")
