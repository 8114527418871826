"""Small float64 models for the rewrite tests: an MLP, a CNN, a residual MLP block, a
CNN with BatchNorm, an MLP with LayerNorm."""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.graph.expr import Call, Constant, Function, Var
from mlcbook.ops.types import Attrs, TensorType
from mlcbook.train.rewrite.transport import SetWeights, weight_arrays


def to64(func: Function) -> Function:
    """``func`` with float64 weights and inputs."""
    x = func.params[0]
    x64 = Var(x.name, TensorType(x.type.shape, "float64"))

    class _To64(SetWeights):
        def visit_Var(self, v):
            return x64 if v is x else v
    values = {k: v.astype(np.float64) for k, v in weight_arrays(func).items()}
    return _To64(values).visit_function(func)


def _c(rng, shape, name, zero=False):
    a = np.zeros(shape) if zero else rng.standard_normal(shape) / np.sqrt(shape[-1])
    return Constant(a, name)


def _gemm(h, rng, i, o, name):
    return Call("gemm", (h, _c(rng, (o, i), f"{name}.weight"),
                         Constant(rng.standard_normal(o) * 0.1, f"{name}.bias")),
                Attrs(trans_b=1), name)


def mlp(batch=5):
    return to64(mb.train.mlp((6, 8, 7, 3), batch=batch, seed=1))


def cnn(batch=3):
    return to64(mb.train.cnn(batch=batch, channels=(3, 4), seed=1))


def residual(batch=5, seed=2):
    """fc1 -> relu -> h; h + fcb(relu(fca(h))) -> relu -> fc3."""
    rng = np.random.default_rng(seed)
    x = Var("input", TensorType((batch, 6), "float64"))
    h = Call("relu", (_gemm(x, rng, 6, 8, "fc1"),), Attrs(), "relu1")
    r = _gemm(Call("relu", (_gemm(h, rng, 8, 5, "fca"),), Attrs(), "relua"), rng, 5, 8, "fcb")
    y = Call("relu", (Call("add", (h, r), Attrs(), "res"),), Attrs(), "relu2")
    return Function((x,), _gemm(y, rng, 8, 3, "fc3"), "residual")


def layer_norm(batch=5, seed=3):
    """fc1 -> layer_norm -> relu -> fc2."""
    rng = np.random.default_rng(seed)
    x = Var("input", TensorType((batch, 6), "float64"))
    h = _gemm(x, rng, 6, 4, "fc1")
    h = Call("layer_norm", (h, Constant(rng.standard_normal(4), "ln.scale"),
                            Constant(rng.standard_normal(4), "ln.bias")), Attrs(axis=-1), "ln")
    h = Call("relu", (h,), Attrs(), "relu1")
    return Function((x,), _gemm(h, rng, 4, 3, "fc2"), "ln_mlp")


def batch_norm_cnn(batch=2, seed=4):
    """conv1 -> batch_norm -> relu -> flatten -> fc."""
    rng = np.random.default_rng(seed)
    x = Var("input", TensorType((batch, 2, 4, 4), "float64"))
    h = Call("conv", (x, _c(rng, (3, 2, 3, 3), "conv1.weight"),
                      Constant(rng.standard_normal(3), "conv1.bias")), Attrs(pads=(1, 1, 1, 1)),
             "conv1")
    bn = [Constant(rng.standard_normal(3), "bn.scale"), Constant(rng.standard_normal(3), "bn.bias"),
          Constant(rng.standard_normal(3), "bn.mean"), Constant(rng.random(3) + 0.5, "bn.var")]
    h = Call("relu", (Call("batch_norm", (h, *bn), Attrs(), "bn"),), Attrs(), "relu1")
    h = Call("flatten", (h,), Attrs(axis=1), "flatten")
    return Function((x,), _gemm(h, rng, 48, 3, "fc"), "bn_cnn")


def inputs(func: Function, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(func.params[0].type.shape)


def run(func: Function, x):
    return mb.graph.interpret(func, x)
