"""The model-zoo architectures onnx ships as test models (``onnx/backend/test/data/light``),
and a variant of each with random weights.

The shipped files compute every weight with ``ConstantOfShape``: each layer's weights are
one repeated value, so every class gets the same score and any two runtimes agree whatever
they compute. :func:`with_random_weights` replaces the conv and gemm weights (every
ConstantOfShape of rank 2 or more) by random initializers (the biases and BatchNorm
statistics stay ConstantOfShape), which makes the outputs depend on every layer's
arithmetic.

    >>> model = with_random_weights(zoo_path("squeezenet"))
    >>> exe = mb.compile(mb.from_onnx(model))     # outputs: probabilities, logits
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import ArgumentError

ZOO = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50", "shufflenet",
       "squeezenet", "vgg19", "zfnet512")


def zoo_path(name: str) -> str:
    """The file of the zoo model ``name`` (one of :data:`ZOO`) inside the installed onnx."""
    if name not in ZOO:
        raise ArgumentError(f"no zoo model {name!r}; onnx ships {', '.join(ZOO)}")
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        f"light_{name}.onnx")


def data_input(model) -> onnx.ValueInfoProto:
    """The graph input that is not an initializer (older IR versions list those as inputs)."""
    inits = {i.name for i in model.graph.initializer}
    return next(vi for vi in model.graph.input if vi.name not in inits)


def with_random_weights(path: str, seed: int = 0) -> onnx.ModelProto:
    """The model at ``path`` with its conv and gemm weights drawn at random (He scaling,
    so activations neither vanish nor explode through the layers); when the model ends in
    a Softmax, the scores before it are a second, last output."""
    model = onnx.load(path)
    g = model.graph
    rng = np.random.default_rng(seed)
    shapes = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    keep = []
    for node in g.node:
        # weights have two axes or more (Inception v1's classifier weight is 4-D and
        # reshaped before its Gemm); biases and BatchNorm statistics have one
        shape = tuple(int(s) for s in shapes.get(node.input[0], ())) \
            if node.op_type == "ConstantOfShape" else ()
        if len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            w = rng.standard_normal(shape).astype(np.float32) * np.float32(np.sqrt(2 / fan_in))
            g.initializer.append(numpy_helper.from_array(w, node.output[0]))
            if model.ir_version < 4:  # older IR lists every initializer as a graph input too
                g.input.append(onnx.helper.make_tensor_value_info(node.output[0], 1, shape))
        else:
            keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    # the scores before the final Softmax are an output too: after it, 1000 classes of
    # similar scores all sit near 1e-3, below what rtol/atol can tell apart
    softmax = [n for n in keep if n.op_type == "Softmax" and n.output[0] == g.output[0].name]
    if softmax:
        g.output.append(onnx.helper.make_value_info(softmax[0].input[0], g.output[0].type))
    return model


__all__ = ["ZOO", "zoo_path", "data_input", "with_random_weights"]
