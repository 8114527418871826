"""Small trainable models as graph functions, initialized by seed (He-normal weights, zero
biases): a multilayer perceptron and a small convolutional network.

    >>> model = mlp((64, 128, 10), batch=32)        # gemm + relu layers, weights (out, in)
    >>> model.weights["fc1.weight"].shape
    (128, 64)
    >>> model = cnn(batch=32)                       # 1x8x8 digits -> 10 classes
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import TrainingError
from ..graph.expr import Call, Constant, Function, Var
from ..ops.types import Attrs, TensorType


#: the most elements a layer's weight may have (1 GiB of float32): a typo such as an extra
#: zero in a size must not end in a MemoryError or a swapping machine
MAX_WEIGHT_ELEMENTS = 1 << 28


def _he(rng, shape, fan_in) -> np.ndarray:
    if int(np.prod(shape, dtype=object)) > MAX_WEIGHT_ELEMENTS:
        raise TrainingError(f"a layer's weight of shape {tuple(shape)} would hold more than "
                            f"{MAX_WEIGHT_ELEMENTS} elements (1 GiB); Instead: use smaller "
                            "layer sizes (e.g. mlp((64, 128, 10)))")
    return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)


def _call(op, *args, name="", **attrs) -> Call:
    return Call(op, args, Attrs(attrs), name)


def _check_sizes(what: str, values, example: str, least: int = 1) -> list[int]:
    """``values`` as ints, each at least ``least``; a TrainingError naming the bad one."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TrainingError(f"{what} must be a sequence of integers, got {values!r}; "
                            f"Instead: e.g. {example}")
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < least:
            raise TrainingError(f"{what}[{k}] is {v!r}: every entry must be an integer of at "
                                f"least {least}; Instead: e.g. {example}")
        out.append(int(v))
    return out


def mlp(sizes: Sequence[int] = (64, 128, 10), batch: int = 64, seed: int = 0) -> Function:
    """``fc1 -> relu -> fc2 -> ... -> fcK`` on ``(batch, sizes[0])`` inputs; logits out."""
    sizes = _check_sizes("mlp sizes", sizes, "mlp((64, 128, 10)): 64 inputs, a hidden "
                         "layer of 128, 10 outputs")
    if len(sizes) < 2:
        raise TrainingError(f"mlp sizes {tuple(sizes)} name no layer: give the input size "
                            "and at least one layer's size; Instead: e.g. mlp((64, 10))")
    batch = _check_sizes("mlp batch", [batch], "batch=32")[0]
    rng = np.random.default_rng(seed)
    x = Var("input", TensorType((batch, sizes[0]), "float32"))
    h = x
    layers = list(zip(sizes[:-1], sizes[1:]))
    for k, (i, o) in enumerate(layers, 1):
        w = Constant(_he(rng, (o, i), i), f"fc{k}.weight")
        b = Constant(np.zeros(o, np.float32), f"fc{k}.bias")
        h = _call("gemm", h, w, b, trans_b=1, name=f"fc{k}")
        if k < len(layers):
            h = _call("relu", h, name=f"relu{k}")
    return Function((x,), h, "mlp")


def cnn(batch: int = 64, channels: Sequence[int] = (16, 32), image: int = 8, classes: int = 10,
        seed: int = 0) -> Function:
    """(3x3 conv, relu) per entry of ``channels``, a 2x2 max pool, then a linear layer, on
    ``(batch, 1, image, image)`` inputs. (The convolutions keep the full 8x8 resolution:
    mlcbook's default conv schedule is slow on tiny images.)"""
    channels = _check_sizes("cnn channels", channels, "channels=(16, 32)")
    batch, classes = _check_sizes("cnn (batch, classes)", [batch, classes],
                                  "cnn(batch=32, classes=10)")
    image = _check_sizes("cnn image", [image], "image=8 (8x8 pictures)", least=2)[0]
    rng = np.random.default_rng(seed)
    x = Var("input", TensorType((batch, 1, image, image), "float32"))
    h, c_in = x, 1
    for k, c_out in enumerate(channels, 1):
        w = Constant(_he(rng, (c_out, c_in, 3, 3), c_in * 9), f"conv{k}.weight")
        b = Constant(np.zeros(c_out, np.float32), f"conv{k}.bias")
        h = _call("conv", h, w, b, pads=(1, 1, 1, 1), name=f"conv{k}")
        h = _call("relu", h, name=f"relu{k}")
        c_in = c_out
    h = _call("max_pool", h, kernel_shape=(2, 2), strides=(2, 2), name="pool")
    h = _call("flatten", h, axis=1, name="flatten")
    features = c_in * (image // 2) ** 2
    w = Constant(_he(rng, (classes, features), features), "fc.weight")
    b = Constant(np.zeros(classes, np.float32), "fc.bias")
    return Function((x,), _call("gemm", h, w, b, trans_b=1, name="fc"), "cnn")


__all__ = ["mlp", "cnn"]
