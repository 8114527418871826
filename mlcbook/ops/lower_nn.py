"""Legalizations of the reducing ops: matmul, gemm, conv, pooling, normalization, softmax and
the ``sum/mean/max/min`` reductions: thin adapters from ONNX-style attributes to
:mod:`mlcbook.te.ops`.

A reduction stage is a TE compute whose whole body is ``te.sum/max/min``; any arithmetic
after it (bias, scaling, division, a cast back to a storage dtype) is a stage of its own,
which the default schedule places inside the reduction's loops.
"""

from __future__ import annotations

from ..te import ops as T
from .registry import register_legalization


@register_legalization("matmul")
def _matmul(ins, attrs, out_type):
    return T.matmul(*ins, name="matmul")


@register_legalization("gemm")
def _gemm(ins, attrs, out_type):
    return T.gemm(*ins, alpha=attrs["alpha"], beta=attrs["beta"], trans_a=attrs["trans_a"],
                  trans_b=attrs["trans_b"], b_panel=attrs["b_panel"], name="gemm")


@register_legalization("conv")
def _conv(ins, attrs, out_type):
    return T.conv(*ins, strides=attrs.get("strides"), pads=attrs.get("pads"),
                  dilations=attrs.get("dilations"), group=attrs["group"], name="conv")


def _pool_attrs(attrs) -> dict:
    return {"kernel_shape": attrs["kernel_shape"], "strides": attrs.get("strides"),
            "pads": attrs.get("pads"), "dilations": attrs.get("dilations"),
            "ceil_mode": bool(attrs["ceil_mode"])}


@register_legalization("max_pool")
def _max_pool(ins, attrs, out_type):
    return T.max_pool(ins[0], **_pool_attrs(attrs), name="max_pool")


@register_legalization("avg_pool")
def _avg_pool(ins, attrs, out_type):
    return T.avg_pool(ins[0], **_pool_attrs(attrs),
                      count_include_pad=bool(attrs["count_include_pad"]), name="avg_pool")


@register_legalization("global_avg_pool")
def _global_avg_pool(ins, attrs, out_type):
    return T.global_avg_pool(ins[0], name="global_avg_pool")


_REDUCE = {"sum": T.reduce_sum, "mean": T.reduce_mean, "max": T.reduce_max,
           "min": T.reduce_min}


def _reduce_adapter(kind):
    @register_legalization(kind)
    def legalize(ins, attrs, out_type):
        return _REDUCE[kind](ins[0], attrs.get("axes"), bool(attrs["keepdims"]), name=kind)
    return legalize


for _kind in _REDUCE:
    _reduce_adapter(_kind)


@register_legalization("softmax")
def _softmax(ins, attrs, out_type):
    return T.softmax(ins[0], attrs["axis"], name="softmax")


@register_legalization("log_softmax")
def _log_softmax(ins, attrs, out_type):
    return T.log_softmax(ins[0], attrs["axis"], name="log_softmax")


@register_legalization("layer_norm")
def _layer_norm(ins, attrs, out_type):
    return T.layer_norm(*ins, axis=attrs["axis"], epsilon=attrs["epsilon"],
                        return_stats=attrs["num_outputs"] == 3, name="layer_norm")
