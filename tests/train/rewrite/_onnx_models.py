"""Models a user would import, for the rewrite tests: MatMul+Add MLPs built with
onnx.helper (weight on the right, on the left, batched inputs), the project's own MLP
exported by ``mb.to_onnx`` with its Gemms rewritten to MatMul+Add, attention (one head,
or heads split off by Reshape + Transpose) and a small transformer block. Each is imported
by ``mb.from_onnx`` and made float64 (``_models.to64``), but ``digits_mlp`` (float32, for
a compiled training run)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh

import mlcbook as mb

from ._models import to64


def _import(nodes, inits: dict, in_shape, out_shape, name, float64=True):
    graph = oh.make_graph(
        nodes, name, [oh.make_tensor_value_info("input", TensorProto.FLOAT, list(in_shape))],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape))],
        [nh.from_array(v if v.dtype == np.int64 else v.astype(np.float32), k)
         for k, v in inits.items()])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    func = mb.from_onnx(model)["main"]
    return to64(func) if float64 else func


def _w(rng, *shape):
    return rng.standard_normal(shape) / np.sqrt(shape[-2] if len(shape) > 1 else 1)


def matmul_mlp(batch=5, seed=0):
    """input (B, 6) -> MatMul w1 + b1 -> Relu -> MatMul w2 + b2 -> Relu -> MatMul w3 + b3."""
    rng = np.random.default_rng(seed)
    sizes = (6, 8, 7, 3)
    nodes, inits, h = [], {}, "input"
    for i in range(1, 4):
        last = i == 3
        inits[f"w{i}"] = _w(rng, sizes[i - 1], sizes[i])
        inits[f"b{i}"] = rng.standard_normal(sizes[i]) * 0.1
        nodes += [oh.make_node("MatMul", [h, f"w{i}"], [f"mm{i}"], name=f"mm{i}"),
                  oh.make_node("Add", [f"mm{i}", f"b{i}"], ["y" if last else f"a{i}"],
                               name=f"add{i}")]
        if not last:
            nodes.append(oh.make_node("Relu", [f"a{i}"], [f"h{i}"], name=f"relu{i}"))
            h = f"h{i}"
    return _import(nodes, inits, (batch, 6), (batch, 3), "matmul_mlp")


def weight_left(batch=5, seed=1):
    """The weight as MatMul's left operand: y = (w2 @ relu(w1 @ input^T + b1))^T, b1 (8, 1)."""
    rng = np.random.default_rng(seed)
    inits = {"w1": _w(rng, 8, 6), "b1": rng.standard_normal((8, 1)) * 0.1,
             "w2": _w(rng, 3, 8)}
    nodes = [oh.make_node("Transpose", ["input"], ["xt"], perm=[1, 0], name="xt"),
             oh.make_node("MatMul", ["w1", "xt"], ["mm1"], name="mm1"),
             oh.make_node("Add", ["mm1", "b1"], ["a1"], name="add1"),
             oh.make_node("Relu", ["a1"], ["h1"], name="relu1"),
             oh.make_node("MatMul", ["w2", "h1"], ["mm2"], name="mm2"),
             oh.make_node("Transpose", ["mm2"], ["y"], perm=[1, 0], name="out")]
    return _import(nodes, inits, (batch, 6), (batch, 3), "weight_left")


def batched(batch=3, tokens=4, seed=2):
    """Tokens (B, T, 6) -> MatMul w1 + b1 -> Relu -> MatMul w2 + b2 -> mean over T."""
    rng = np.random.default_rng(seed)
    inits = {"w1": _w(rng, 6, 8), "b1": rng.standard_normal(8) * 0.1, "w2": _w(rng, 8, 3),
             "b2": rng.standard_normal(3) * 0.1}
    nodes = [oh.make_node("MatMul", ["input", "w1"], ["mm1"], name="mm1"),
             oh.make_node("Add", ["mm1", "b1"], ["a1"], name="add1"),
             oh.make_node("Relu", ["a1"], ["h1"], name="relu1"),
             oh.make_node("MatMul", ["h1", "w2"], ["mm2"], name="mm2"),
             oh.make_node("Add", ["mm2", "b2"], ["a2"], name="add2"),
             oh.make_node("ReduceMean", ["a2"], ["y"], axes=[1], keepdims=0, name="pool")]
    return _import(nodes, inits, (batch, tokens, 6), (batch, 3), "batched")


def exported_mlp(batch=5, seed=3):
    """``mb.train.mlp`` exported by ``mb.to_onnx``, each Gemm rewritten as MatMul + Add
    (its weight transposed when ``transB``), imported back."""
    model = mb.to_onnx(mb.train.mlp((6, 8, 7, 3), batch=batch, seed=seed))
    inits = {t.name: nh.to_array(t) for t in model.graph.initializer}
    nodes = []
    for n in model.graph.node:
        if n.op_type != "Gemm":
            nodes.append(n)
            continue
        attrs = {a.name: oh.get_attribute_value(a) for a in n.attribute}
        assert attrs.get("transA", 0) == 0 and attrs.get("alpha", 1.0) == 1.0
        if attrs.get("transB", 0):
            inits[n.input[1]] = inits[n.input[1]].T
        nodes += [oh.make_node("MatMul", n.input[:2], [n.output[0] + ".mm"], name=n.name + ".mm"),
                  oh.make_node("Add", [n.output[0] + ".mm", n.input[2]], list(n.output),
                               name=n.name)]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    del model.graph.initializer[:]
    model.graph.initializer.extend(nh.from_array(v, k) for k, v in inits.items())
    onnx.checker.check_model(model)
    return to64(mb.from_onnx(model)["main"])


def _self_attention(x, nodes, inits, rng, shape, heads):
    """Nodes of multi-head self-attention on ``x`` of ``shape`` (B, T, dim): q, k, v
    projections (MatMul + Add), softmax(q k^T / sqrt(dh)) v per head, heads merged back, the
    output projection wo + bo. Returns the output's name."""
    batch, tokens, dim = shape
    inits["scale"] = np.full((), 1 / np.sqrt(dim // heads))
    for p in "qkv":
        inits[f"w{p}"], inits[f"b{p}"] = _w(rng, dim, dim), rng.standard_normal(dim) * 0.1
        nodes += [oh.make_node("MatMul", [x, f"w{p}"], [f"{p}.mm"], name=f"{p}.mm"),
                  oh.make_node("Add", [f"{p}.mm", f"b{p}"], [p], name=f"{p}.add")]
    q, k, v = "q", "k", "v"
    if heads > 1:                   # (B, T, dim) -> (B, heads, T, dh)
        inits["heads"] = np.array([batch, tokens, heads, dim // heads], np.int64)
        for p in "qkv":
            nodes += [oh.make_node("Reshape", [p, "heads"], [f"{p}.r"], name=f"{p}.r"),
                      oh.make_node("Transpose", [f"{p}.r"], [f"{p}.h"], perm=[0, 2, 1, 3],
                                   name=f"{p}.h")]
        q, k, v = "q.h", "k.h", "v.h"
    rank = 4 if heads > 1 else 3
    kt = list(range(rank - 2)) + [rank - 1, rank - 2]
    nodes += [oh.make_node("Transpose", [k], ["kt"], perm=kt, name="kt"),
              oh.make_node("MatMul", [q, "kt"], ["s"], name="scores"),
              oh.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"),
              oh.make_node("Softmax", ["ss"], ["p"], axis=-1, name="softmax"),
              oh.make_node("MatMul", ["p", v], ["att"], name="att")]
    att = "att"
    if heads > 1:                   # heads merged back: (B, H, T, dh) -> (B, T, dim)
        inits["merged"] = np.array([batch, tokens, dim], np.int64)
        nodes += [oh.make_node("Transpose", ["att"], ["att.t"], perm=[0, 2, 1, 3],
                               name="att.t"),
                  oh.make_node("Reshape", ["att.t", "merged"], ["att.m"], name="att.m")]
        att = "att.m"
    inits["wo"], inits["bo"] = _w(rng, dim, dim), rng.standard_normal(dim) * 0.1
    nodes += [oh.make_node("MatMul", [att, "wo"], ["o.mm"], name="o.mm"),
              oh.make_node("Add", ["o.mm", "bo"], ["o"], name="o.add")]
    return "o"


def _linear(x, name, rng, inits, nodes, n_in, n_out, out=None):
    inits[f"{name}.w"] = _w(rng, n_in, n_out)
    inits[f"{name}.b"] = rng.standard_normal(n_out) * 0.1
    nodes += [oh.make_node("MatMul", [x, f"{name}.w"], [f"{name}.mm"], name=f"{name}.mm"),
              oh.make_node("Add", [f"{name}.mm", f"{name}.b"], [out or name], name=name)]
    return out or name


def attention(batch=2, tokens=3, dim=4, heads=1, seed=4):
    """Self-attention on (B, T, dim) (see :func:`_self_attention`), then the mean over T
    and a classifier to 3 classes."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], {}
    o = _self_attention("input", nodes, inits, rng, (batch, tokens, dim), heads)
    nodes.append(oh.make_node("ReduceMean", [o], ["pool"], axes=[1], keepdims=0, name="pool"))
    _linear("pool", "cls", rng, inits, nodes, dim, 3, out="y")
    return _import(nodes, inits, (batch, tokens, dim), (batch, 3), "attention")


def transformer(batch=2, tokens=3, feat=5, dim=4, heads=2, hidden=6, seed=5):
    """A small transformer block on (B, T, feat) tokens: an embedding projection, h + MHSA(h)
    (2 heads), h + MLP(LayerNorm(h)) (MatMul + Add, Relu), mean over T, a classifier."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], {}
    h = _linear("input", "embed", rng, inits, nodes, feat, dim)
    o = _self_attention(h, nodes, inits, rng, (batch, tokens, dim), heads)
    inits["ln.scale"], inits["ln.bias"] = 1 + 0.1 * rng.standard_normal(dim), np.zeros(dim)
    nodes += [oh.make_node("Add", [h, o], ["res1"], name="res1"),
              oh.make_node("LayerNormalization", ["res1", "ln.scale", "ln.bias"], ["ln"],
                           axis=-1, name="ln")]
    m = _linear("ln", "fc1", rng, inits, nodes, dim, hidden)
    nodes.append(oh.make_node("Relu", [m], ["fc1.relu"], name="fc1.relu"))
    m = _linear("fc1.relu", "fc2", rng, inits, nodes, hidden, dim)
    nodes += [oh.make_node("Add", ["res1", m], ["res2"], name="res2"),
              oh.make_node("ReduceMean", ["res2"], ["pool"], axes=[1], keepdims=0,
                           name="pool")]
    _linear("pool", "cls", rng, inits, nodes, dim, 3, out="y")
    return _import(nodes, inits, (batch, tokens, feat), (batch, 3), "transformer")


def digits_mlp(seed=6):
    """A float32 MatMul+Add MLP 64 -> 8 -> 10 for the digits data, batch 32."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], {}
    h = _linear("input", "fc1", rng, inits, nodes, 64, 8)
    nodes.append(oh.make_node("Relu", [h], ["relu1"], name="relu1"))
    _linear("relu1", "fc2", rng, inits, nodes, 8, 10, out="y")
    return _import(nodes, inits, (32, 64), (32, 10), "digits_mlp", float64=False)


def einsum_mlp(transposed=False, batch=2, tokens=4, seed=7):
    """Einsum projections of (B, T, 6) tokens: ``btd,dh->bth`` + b1, Relu, ``bth,hc->btc``,
    mean over T (with ``transposed``, weights stored (out, in): ``btd,hd->bth``)."""
    rng = np.random.default_rng(seed)
    eqs = ("btd,hd->bth", "bth,ch->btc") if transposed else ("btd,dh->bth", "bth,hc->btc")
    w1, w2 = _w(rng, 6, 8), _w(rng, 8, 3)
    inits = {"w1": w1.T if transposed else w1, "b1": rng.standard_normal(8) * 0.1,
             "w2": w2.T if transposed else w2}
    nodes = [oh.make_node("Einsum", ["input", "w1"], ["e1"], equation=eqs[0], name="e1"),
             oh.make_node("Add", ["e1", "b1"], ["a1"], name="add1"),
             oh.make_node("Relu", ["a1"], ["h1"], name="relu1"),
             oh.make_node("Einsum", ["h1", "w2"], ["e2"], equation=eqs[1], name="e2"),
             oh.make_node("ReduceMean", ["e2"], ["y"], axes=[1], keepdims=0, name="pool")]
    return _import(nodes, inits, (batch, tokens, 6), (batch, 3), "einsum_mlp")


def einsum_transposed():
    return einsum_mlp(transposed=True)
