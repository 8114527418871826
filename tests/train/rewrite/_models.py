"""Small float64 models for the rewrite tests: an MLP, a CNN, a residual MLP block, a
CNN with BatchNorm, an MLP with LayerNorm."""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.graph.expr import Call, Constant, Function, Var
from mlcbook.ops.types import Attrs, TensorType
from mlcbook.train.rewrite.transport import SetWeights, weight_arrays, with_weights


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


LABELS_SEED = 7


def labels(func: Function):
    n = func.params[0].type.shape[0]
    return np.random.default_rng(LABELS_SEED).integers(0, func.ret_type.shape[1], n)


def gradients(func: Function, x) -> dict:
    """d cross_entropy / d every weight, by the library's autodiff, in float64."""
    y = Var("labels", TensorType(func.ret_type.shape[:1], "int64"))
    loss = Function(func.params + (y,), mb.train.cross_entropy(func.body, y), "loss")
    names = list(func.weights)
    out = mb.graph.interpret(mb.train.grad(loss, names), x, labels(func))
    return dict(zip(names, out[1:]))


def fresh_state(func: Function, optimizer) -> dict:
    state = {}
    for k in mb.graph.declarations(func).parameters:
        c = func.weights[k]
        for slot, v in optimizer.init_state(np.array(c.data)).items():
            state[f"{k}.{slot}"] = v
    return state


def step(func: Function, optimizer, state: dict, x, lr=0.1):
    """One optimizer step of ``func`` by the library's compiled-step graph, interpreted:
    (new weights, new state)."""
    ts = mb.train.build_step(func, "cross_entropy", optimizer)
    feed = {"input": x, "labels": labels(func), "lr": np.float64(lr)}
    feed.update({k: v for k, v in weight_arrays(func).items() if k in ts.params})
    feed.update(state)
    outs = mb.graph.interpret(ts.function, **feed)
    n = len(ts.params)
    names = [v.name for v in ts.function.params[len(ts.data_inputs) + 2 + n:]]
    return dict(zip(ts.params, outs[1:1 + n])), dict(zip(names, outs[1 + n:]))


def trained_state(func: Function, optimizer, x, steps=3):
    """Optimizer state after a few steps on ``x`` (so moments are not zero)."""
    state = fresh_state(func, optimizer)
    f = func
    for _ in range(steps):
        w, state = step(f, optimizer, state, x)
        f = with_weights(f, w)
    return f, state
