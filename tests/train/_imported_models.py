"""The held-out models of issue 32's judgement, built as ONNX graphs the way an exporter
writes them (a symbolic batch ``N``, opset 17), for 8x8 digit images ``(N, 1, 8, 8)``:

- :func:`cnn`: Conv -> BatchNormalization (training mode) -> Relu -> MaxPool -> Flatten ->
  Dropout (seeded) -> Gemm, 10 classes;
- :func:`gru`: each image a sequence of its 8 rows -> GRU -> last hidden state -> Gemm;
- :func:`decoder`: a tiny autoencoder whose decoder is two ConvTransposes (one with
  overlapping kernels, padding and output padding) and a Sigmoid, trained with mse;
- :func:`mlp`: Flatten -> MatMul + Add -> Relu -> MatMul + Add;
- :func:`vit`: 4x4 patches embedded by MatMul, a learned class token broadcast to the
  batch (Expand, or Tile) and concatenated in front, positional embeddings, pre-norm
  two-head attention (MatMul, Softmax) and MLP with residuals, the class token's
  LayerNorm and a classifier.

Each function returns an ``onnx.ModelProto``; :func:`train_reference` trains the imported
model in float64 with the reference interpreter (``interpret`` on the training step's
graph), independently of the compiled path.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh

import mlcbook as mb
from mlcbook.graph.expr import Constant, Var
from mlcbook.graph.functor import ExprMutator
from mlcbook.graph.interpret import interpret
from mlcbook.ops.types import TensorType

BATCH, CLASSES = 32, 10


def _model(nodes, inits: dict, out_shape, name: str, opset: int = 17) -> onnx.ModelProto:
    graph = oh.make_graph(
        nodes, name, [oh.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 1, 8, 8])],
        [oh.make_tensor_value_info("y", TensorProto.FLOAT, ["N"] + list(out_shape))],
        [nh.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)])
    model.ir_version = 8 if opset < 23 else 10
    onnx.checker.check_model(model, full_check=True)
    return model


def _w(rng, *shape, fan_in=None):
    fan_in = fan_in or int(np.prod(shape[1:]))
    return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)


def _i64(*values):
    return np.asarray(values, np.int64)


def cnn(seed: int = 0, channels: int = 8, ratio: float = 0.2) -> onnx.ModelProto:
    """Conv(1->C, 3x3, pad 1, no bias: BatchNorm's takes its place) ->
    BatchNormalization(training_mode=1, momentum 0.9) -> Relu -> MaxPool(2x2) -> Flatten ->
    Dropout(ratio, seed=7) -> Gemm(C*16 -> 10)."""
    rng = np.random.default_rng(seed)
    c = channels
    inits = {"conv.w": _w(rng, c, 1, 3, 3),
             "bn.scale": np.ones(c, np.float32), "bn.bias": np.zeros(c, np.float32),
             "bn.mean": np.zeros(c, np.float32), "bn.var": np.ones(c, np.float32),
             "drop.ratio": np.float32(ratio), "drop.training": np.bool_(True),
             "fc.w": _w(rng, CLASSES, c * 16), "fc.b": np.zeros(CLASSES, np.float32)}
    nodes = [oh.make_node("Conv", ["image", "conv.w"], ["h"], name="conv",
                          pads=[1, 1, 1, 1]),
             oh.make_node("BatchNormalization", ["h", "bn.scale", "bn.bias", "bn.mean",
                                                 "bn.var"], ["n", "bn.new_mean", "bn.new_var"],
                          name="bn", momentum=0.9, training_mode=1),
             oh.make_node("Relu", ["n"], ["r"], name="relu"),
             oh.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                          strides=[2, 2]),
             oh.make_node("Flatten", ["p"], ["f"], name="flat"),
             oh.make_node("Dropout", ["f", "drop.ratio", "drop.training"], ["d"], name="drop",
                          seed=7),
             oh.make_node("Gemm", ["d", "fc.w", "fc.b"], ["y"], name="fc", transB=1)]
    return _model(nodes, inits, [CLASSES], "cnn_bn_dropout")


def gru(seed: int = 1, hidden: int = 16) -> onnx.ModelProto:
    """The image's 8 rows as a sequence (Reshape, Transpose to (8, N, 8)) -> GRU(hidden) ->
    its last hidden state -> Gemm(hidden -> 10)."""
    rng = np.random.default_rng(seed)
    h = hidden
    inits = {"rows": _i64(0, 8, 8), "seq": _i64(-1, h), "gru.W": _w(rng, 1, 3 * h, 8),
             "gru.R": _w(rng, 1, 3 * h, h), "gru.B": np.zeros((1, 6 * h), np.float32),
             "fc.w": _w(rng, CLASSES, h), "fc.b": np.zeros(CLASSES, np.float32)}
    nodes = [oh.make_node("Reshape", ["image", "rows"], ["x3"], name="rows"),
             oh.make_node("Transpose", ["x3"], ["xs"], name="time_major", perm=[1, 0, 2]),
             oh.make_node("GRU", ["xs", "gru.W", "gru.R", "gru.B"], ["", "h_last"],
                          name="gru", hidden_size=h),
             oh.make_node("Reshape", ["h_last", "seq"], ["hl"], name="last"),
             oh.make_node("Gemm", ["hl", "fc.w", "fc.b"], ["y"], name="fc", transB=1)]
    return _model(nodes, inits, [CLASSES], "gru_classifier")


def decoder(seed: int = 2, code: int = 32) -> onnx.ModelProto:
    """Flatten -> Gemm(64 -> code) -> Relu -> Reshape (N, code/4, 2, 2) -> ConvTranspose(3x3,
    stride 2, pad 1, output padding 1) -> (N, 4, 4, 4) -> Relu -> ConvTranspose(2x2, stride
    2) -> (N, 1, 8, 8) -> Sigmoid: the image again."""
    rng = np.random.default_rng(seed)
    c = code // 4
    inits = {"enc.w": _w(rng, code, 64), "enc.b": np.zeros(code, np.float32),
             "grid": _i64(0, c, 2, 2),
             "up1.w": _w(rng, c, 4, 3, 3, fan_in=c * 9 // 4), "up1.b": np.zeros(4, np.float32),
             "up2.w": _w(rng, 4, 1, 2, 2, fan_in=4), "up2.b": np.zeros(1, np.float32)}
    nodes = [oh.make_node("Flatten", ["image"], ["f"], name="flat"),
             oh.make_node("Gemm", ["f", "enc.w", "enc.b"], ["e"], name="enc", transB=1),
             oh.make_node("Relu", ["e"], ["er"], name="enc_relu"),
             oh.make_node("Reshape", ["er", "grid"], ["g"], name="to_grid"),
             oh.make_node("ConvTranspose", ["g", "up1.w", "up1.b"], ["u1"], name="up1",
                          kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                          output_padding=[1, 1]),
             oh.make_node("Relu", ["u1"], ["r1"], name="up1_relu"),
             oh.make_node("ConvTranspose", ["r1", "up2.w", "up2.b"], ["u2"], name="up2",
                          kernel_shape=[2, 2], strides=[2, 2]),
             oh.make_node("Sigmoid", ["u2"], ["y"], name="out")]
    return _model(nodes, inits, [1, 8, 8], "conv_transpose_decoder")


def mlp(seed: int = 4, hidden: int = 24) -> onnx.ModelProto:
    """Flatten -> MatMul(64 -> hidden) + Add -> Relu -> MatMul(hidden -> 10) + Add: an MLP
    built the way exporters write ``nn.Linear`` (no Gemm)."""
    rng = np.random.default_rng(seed)
    inits, nodes = {}, [oh.make_node("Flatten", ["image"], ["f"], name="flat")]
    _linear("f", "fc1", 64, hidden, rng, inits, nodes)
    nodes.append(oh.make_node("Relu", ["fc1"], ["fc1.r"], name="relu1"))
    _linear("fc1.r", "fc2", hidden, CLASSES, rng, inits, nodes, out="y")
    return _model(nodes, inits, [CLASSES], "matmul_mlp")


def vit(seed: int = 3, dim: int = 16, heads: int = 2, hidden: int = 32,
        class_token: str = "expand", fused: bool = False) -> onnx.ModelProto:
    """A one-block ViT on four 4x4 patches; the class token (1, 1, dim) reaches the batch
    by ``Expand`` or ``Tile`` to a shape built from ``Shape(image)``; ``fused``: the
    attention is ONNX's ``Attention`` op (opset 23) instead of MatMul and Softmax."""
    rng = np.random.default_rng(seed)
    d, dh, t = dim, dim // heads, 5
    inits = {"patches": _i64(0, 2, 4, 2, 4), "flat_patches": _i64(0, 4, 16),
             "embed.w": _w(rng, 16, d, fan_in=16), "embed.b": np.zeros(d, np.float32),
             "cls": (0.02 * rng.standard_normal((1, 1, d))).astype(np.float32),
             "pos": (0.02 * rng.standard_normal((t, d))).astype(np.float32),
             "first": _i64(0), "one": _i64(1), "tail": _i64(1, d) if class_token == "expand"
             else _i64(1, 1), "heads": _i64(0, t, heads, dh), "merged": _i64(0, t, d),
             "scale": np.float32(1 / np.sqrt(dh)), "cls_index": np.int64(0)}
    nodes = [oh.make_node("Reshape", ["image", "patches"], ["p5"], name="patches"),
             oh.make_node("Transpose", ["p5"], ["p5t"], name="patch_major",
                          perm=[0, 1, 3, 2, 4]),
             oh.make_node("Reshape", ["p5t", "flat_patches"], ["p"], name="flat_patches"),
             oh.make_node("MatMul", ["p", "embed.w"], ["pe"], name="embed.mm"),
             oh.make_node("Add", ["pe", "embed.b"], ["tok"], name="embed"),
             oh.make_node("Shape", ["image"], ["ishape"], name="shape"),
             oh.make_node("Slice", ["ishape", "first", "one"], ["n"], name="batch"),
             oh.make_node("Concat", ["n", "tail"], ["cls_shape"], name="cls_shape", axis=0)]
    if class_token == "expand":
        nodes.append(oh.make_node("Expand", ["cls", "cls_shape"], ["clsb"], name="cls_b"))
    else:
        nodes.append(oh.make_node("Tile", ["cls", "cls_shape"], ["clsb"], name="cls_b"))
    nodes += [oh.make_node("Concat", ["clsb", "tok"], ["seq"], name="prepend", axis=1),
              oh.make_node("Add", ["seq", "pos"], ["x0"], name="pos_add")]
    _layer_norm("x0", "ln1", d, inits, nodes)
    for p in "qkv":
        _linear("ln1", p, d, d, rng, inits, nodes)
        if fused:
            continue
        nodes += [oh.make_node("Reshape", [p, "heads"], [f"{p}.r"], name=f"{p}.r"),
                  oh.make_node("Transpose", [f"{p}.r"], [f"{p}.h"], name=f"{p}.h",
                               perm=[0, 2, 1, 3])]
    if fused:
        nodes.append(oh.make_node("Attention", ["q", "k", "v"], ["att.m"], name="att",
                                  q_num_heads=heads, kv_num_heads=heads))
    else:
        nodes += [
            oh.make_node("Transpose", ["k.h"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
            oh.make_node("MatMul", ["q.h", "kt"], ["s"], name="scores"),
            oh.make_node("Mul", ["s", "scale"], ["ss"], name="scaled"),
            oh.make_node("Softmax", ["ss"], ["a"], name="softmax", axis=-1),
            oh.make_node("MatMul", ["a", "v.h"], ["att"], name="att"),
            oh.make_node("Transpose", ["att"], ["att.t"], name="att.t", perm=[0, 2, 1, 3]),
            oh.make_node("Reshape", ["att.t", "merged"], ["att.m"], name="att.m")]
    _linear("att.m", "o", d, d, rng, inits, nodes)
    nodes.append(oh.make_node("Add", ["x0", "o"], ["x1"], name="res1"))
    _layer_norm("x1", "ln2", d, inits, nodes)
    _linear("ln2", "fc1", d, hidden, rng, inits, nodes)
    nodes.append(oh.make_node("Relu", ["fc1"], ["fc1.r"], name="fc1.relu"))
    _linear("fc1.r", "fc2", hidden, d, rng, inits, nodes)
    nodes += [oh.make_node("Add", ["x1", "fc2"], ["x2"], name="res2"),
              oh.make_node("Gather", ["x2", "cls_index"], ["c"], name="cls_out", axis=1)]
    _layer_norm("c", "ln3", d, inits, nodes)
    _linear("ln3", "head", d, CLASSES, rng, inits, nodes, out="y")
    if fused:
        for k in ("heads", "merged", "scale"):
            del inits[k]
    return _model(nodes, inits, [CLASSES], f"vit_{class_token}", 23 if fused else 17)


def _linear(x, name, n_in, n_out, rng, inits, nodes, out=None):
    inits[f"{name}.w"] = _w(rng, n_in, n_out, fan_in=n_in)
    inits[f"{name}.b"] = np.zeros(n_out, np.float32)
    nodes += [oh.make_node("MatMul", [x, f"{name}.w"], [f"{name}.mm"], name=f"{name}.mm"),
              oh.make_node("Add", [f"{name}.mm", f"{name}.b"], [out or name], name=name)]


def _layer_norm(x, name, d, inits, nodes):
    inits[f"{name}.scale"] = np.ones(d, np.float32)
    inits[f"{name}.bias"] = np.zeros(d, np.float32)
    nodes.append(oh.make_node("LayerNormalization", [x, f"{name}.scale", f"{name}.bias"],
                              [name], name=name, axis=-1))


# --- float64 ------------------------------------------------------------------------------
class _Float64(ExprMutator):
    """Float32 weights and inputs as float64 (integer and bool ones kept)."""

    def visit_Var(self, v: Var):
        if v.type.dtype != "float32":
            return v
        return Var(v.name, TensorType(v.type.shape, "float64"))

    def visit_Constant(self, c: Constant):
        if c.data.dtype != np.float32:
            return c
        return Constant(c.data.astype(np.float64), c.name, c.owner)


def float64(func):
    """``func`` (a graph function) computing in float64; its declarations are kept."""
    return _Float64().visit_function(func)


def train_reference(func, loss: str, optimizer, batches, steps: int):
    """Train ``func`` (made float64) for ``steps`` steps of ``batches`` by interpreting the
    training step's graph: ``(params, buffers, losses)`` after them."""
    f64 = float64(func)
    ts = mb.train.build_step(f64, loss, optimizer)
    values = {n: np.array(c.data) for n, c in f64.weights.items() if n in ts.params + ts.buffers}
    for p in ts.params:
        fresh = optimizer.init_state(values[p])
        values.update({name: fresh[slot] for slot, name in ts.owned_by(p).items()})
    order = list(ts.params) + list(ts.state) + list(ts.buffers)
    losses = []
    for k in range(steps):
        x, y = batches.next()
        feed = {ts.data_inputs[0]: x.astype(np.float64),
                "labels": y.astype(np.float64) if loss == "mse" else y,
                "lr": np.float64(optimizer.schedule(k))}
        outs = interpret(ts.function, **feed, **{n: values[n] for n in order})
        losses.append(float(outs[0]))
        values.update({n: np.asarray(v) for n, v in zip(order, outs[1:])})
    return ({n: values[n] for n in ts.params}, {n: values[n] for n in ts.buffers}, losses)
