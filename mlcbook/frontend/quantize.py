"""Quantizing a float ONNX model the way deployments do it: onnxruntime's static
quantization in QDQ format, calibrated on a few inputs. ``mb.compile`` then runs the
quantized groups on integer kernels (:mod:`mlcbook.graph.passes.qdq`).

    >>> q = quantize_qdq(examples.mlp(batch=4), [{"input": x} for x in samples])
    >>> exe = mb.compile(mb.from_onnx(q))

Activations are uint8 with a zero point, weights int8 and symmetric, biases int32 (what
the ``u8 x i8`` dot-product instructions take). ``reduce_range`` (the default) keeps the
weights in 7 bits, as onnxruntime advises for CPUs without VNNI, whose ``u8 x i8`` kernels
add pairs of products in saturating int16; mlcbook's kernels are exact either way.
"""

from __future__ import annotations

import os
import tempfile
from typing import Mapping, Sequence

import numpy as np

from ..errors import UnsupportedModelError
from ..optional import require

__all__ = ["quantize_qdq"]


def quantize_qdq(model, calibration: Sequence[Mapping[str, np.ndarray]],
                 per_channel: bool = False, reduce_range: bool = True):
    """``model`` (an ``onnx.ModelProto``) quantized by onnxruntime in QDQ format, its
    activation ranges measured on the ``calibration`` inputs (a list of feed dicts)."""
    import onnx
    ortq = require("onnxruntime.quantization", "quantize_qdq (onnxruntime's static quantizer)")
    CalibrationDataReader, QuantFormat = ortq.CalibrationDataReader, ortq.QuantFormat
    QuantType, quantize_static = ortq.QuantType, ortq.quantize_static
    if not calibration:
        raise UnsupportedModelError("quantize_qdq: no calibration inputs; Instead: pass a few "
                                    "typical inputs, e.g. [{'input': x} for x in samples]")

    class _Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(calibration)

        def get_next(self):
            return next(self.feeds, None)

    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "float.onnx"), os.path.join(d, "qdq.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, _Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=per_channel, reduce_range=reduce_range)
        return onnx.load(dst)
