"""Importing an ONNX model to train it (``mb.from_onnx(model, training=True)``):
BatchNormalization and Dropout in their training forms, and the role of every weight.

- **BatchNormalization** becomes ``batch_norm_train`` (batch statistics); its running mean
  and variance are buffers updated with ONNX's momentum, and its optional outputs 1 and 2
  are those updated statistics. Opsets 9 to 13 mark training by five outputs instead of
  ``training_mode``: outputs 3 and 4 (``saved_mean``, ``saved_var``) are the batch's mean
  and population variance, as ONNX's reference computes them.
- **Dropout** becomes ``dropout`` with its ratio and seed and a new 0-d int64 buffer
  ``<node>.counter`` (the step number, which makes each step's mask new); its optional
  output 1 is the mask.
- **Roles** (:func:`declare_imported`): the graph's rule (:mod:`mlcbook.graph.params`),
  and, when the model lists some of its float initializers among its graph inputs but not
  all, the listed ones are the parameters and the others constants.

    >>> mod = mb.from_onnx(model, batch_size=32, training=True)
    >>> print(mb.graph.declarations(mod["main"]))
    main: 6 parameters, 2 buffers, 1 constants
      conv.weight  parameter  Tensor((8, 3, 3, 3), "float32")  a float weight of 'conv'
      ...
"""

from __future__ import annotations

import logging

import numpy as np

from ..graph.expr import Constant, Function
from ..graph.params import (CONSTANT, PARAMETER, RUNNING_MEAN, RUNNING_VAR, Declared,
                            channel_moments, declarations, declare, running_update)
from .onnx_ops import converter, guard_dtype

logger = logging.getLogger(__name__)


@converter("BatchNormalization", attrs=("epsilon", "momentum", "training_mode"), outputs=5,
           training=True)
@guard_dtype
def _batch_norm_train(cx, ins, attrs):
    bn = cx.call("batch_norm_train", *ins[:5], epsilon=float(attrs.get("epsilon", 1e-5)),
                 momentum=float(attrs.get("momentum", 0.9)))
    outs = [bn]
    for k, rule in ((1, RUNNING_MEAN), (2, RUNNING_VAR)):
        used = len(cx.node.output) > k and cx.node.output[k]
        outs.append(running_update(bn, rule, ins[2 + k]) if used else None)
    if any(len(cx.node.output) > k and cx.node.output[k] for k in (3, 4)):
        outs.extend(channel_moments(ins[0]))        # opsets 9-13: saved_mean, saved_var
    return outs


@converter("Dropout", attrs=("ratio", "seed", "is_test"), static=(1, 2), outputs=2,
           training=True)
@guard_dtype
def _dropout_train(cx, ins, attrs):
    ratio = cx.number(1, "ratio")
    ratio = float(attrs.get("ratio", 0.5) if ratio is None else ratio)
    x = ins[0]
    counter = Constant(np.zeros((), np.int64), f"{cx.node.name or cx.node.output[0]}.counter")
    rule = {"ratio": ratio, "seed": int(attrs.get("seed", 0))}
    outs = [cx.call("dropout", x, counter, **rule)]
    if len(cx.node.output) > 1 and cx.node.output[1]:
        # the mask: where the same dropout keeps an all-ones tensor
        kept = cx.call("dropout", Constant(np.ones(x.shape, x.dtype)), counter, **rule,
                       suffix="_keep")
        outs.append(cx.call("greater", kept, Constant(np.zeros((), x.dtype)), suffix="_mask"))
    return outs


def declare_imported(func: Function, model) -> Function:
    """``func`` (imported from ``model`` for training) with the role of every weight
    declared, and a log line saying how many of each."""
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    listed = inits & {vi.name for vi in graph.input}
    current = declarations(func)
    entries = list(current.values())
    candidates = [d for d in entries if d.kind == PARAMETER and d.name in inits]
    listed_params = [d for d in candidates if d.name in listed]
    if model.ir_version >= 4 and listed_params and len(listed_params) < len(candidates):
        # since IR version 4 an initializer need not be an input: a model that lists some
        # among its inputs marks them as the values meant to change
        entries = [
            (Declared(d.name, PARAMETER, "an initializer listed among the graph inputs")
             if d.name in listed else
             Declared(d.name, CONSTANT, f"an initializer not among the graph inputs, where "
                      f"the model lists {len(listed_params)} trainable ones"))
            if d in candidates else d for d in entries]
    out = declare(func, entries=entries)
    decided = declarations(out)
    logger.info("from_onnx(training=True): %d parameters, %d buffers, %d constants; "
                "print(mb.graph.declarations(mod['main'])) shows each and why",
                len(decided.parameters), len(decided.buffers), len(decided.constants))
    return out


__all__ = ["declare_imported"]
