"""Random ONNX models for differential testing: DAGs of supported ops built with
``onnx.helper``, with random shapes, broadcasting, attributes and dtypes.

    >>> case = random_model(np.random.default_rng(0))
    >>> case.ops                     # the op types of its nodes, in order
    >>> case.inputs["x0"].shape      # a random input shape

Values are kept where float32 arithmetic is well conditioned (inputs in [-2, 2], divisors
and logarithms away from zero, no exp of an unbounded value), so that two correct
implementations agree to rtol 1e-4: a mismatch is a bug, not rounding noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hard import GENERATORS, old_opset_model

OPSET = 18
#: ranks of Gather's index tensors: 0-d (a scalar index drops the axis), 1-d and 2-d
GATHER_INDEX_RANKS = (0, 1, 2)


@dataclass
class Case:
    """A model and the inputs it runs on."""

    model: object
    inputs: dict[str, np.ndarray]
    ops: list[str] = field(default_factory=list)


@dataclass
class _Value:
    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    #: values stay in a range where every op below is well conditioned
    bounded: bool = True


class _Unsupported(Exception):
    pass


class _Builder:
    def __init__(self, rng: np.random.Generator, supported: frozenset):
        self.rng = rng
        self.supported = supported
        self.nodes: list = []
        self.inits: list = []
        self.inputs: dict[str, np.ndarray] = {}
        self.input_infos: list = []
        self.values: list[_Value] = []
        #: names of values that are model outputs although later nodes use them too
        self.keep_outputs: set[str] = set()
        self.n = 0

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def add_input(self, shape, dtype="float32") -> _Value:
        from onnx import helper
        name = f"x{len(self.inputs)}"
        if dtype == "float32":
            data = self.rng.uniform(-2, 2, shape).astype(np.float32)
        else:
            data = self.rng.integers(-5, 6, shape).astype(dtype)
        self.inputs[name] = data
        self.input_infos.append(helper.make_tensor_value_info(name, _onnx_type(dtype), shape))
        v = _Value(name, tuple(shape), dtype)
        self.values.append(v)
        return v

    def const(self, array: np.ndarray) -> str:
        from onnx import numpy_helper
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, ins: list[str], shape, dtype="float32", bounded=True, **attrs):
        from onnx import helper
        if op not in self.supported:
            raise _Unsupported(op)
        out = self.fresh("v")
        self.nodes.append(helper.make_node(op, ins, [out], **attrs))
        v = _Value(out, tuple(int(d) for d in shape), dtype, bounded)
        self.values.append(v)
        return v

    def pick(self, dtype="float32", pred=lambda v: True) -> _Value | None:
        # prefer recent values so that models are chains and DAGs, not flat fans
        cands = [v for v in self.values if v.dtype == dtype and v.shape and pred(v)]
        if not cands:
            return None
        w = np.arange(1, len(cands) + 1, dtype=np.float64) ** 2
        return cands[self.rng.choice(len(cands), p=w / w.sum())]


def _onnx_type(dtype: str) -> int:
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


# --- op generators: each adds one node (and any constants) or returns None ----------------------
_BOUNDED_UNARY = ("Relu", "Sigmoid", "Tanh", "Neg", "Abs", "Erf", "Sin", "Cos", "Atan",
                  "Floor", "Ceil", "Round", "Sign", "Softsign", "HardSigmoid", "HardSwish",
                  "Elu", "Selu", "Celu", "ThresholdedRelu", "Shrink", "LeakyRelu")
_UNBOUNDED_UNARY = ("Relu", "Neg", "Abs", "Tanh", "Sigmoid")


def _unary(b: _Builder):
    x = b.pick()
    ops = _BOUNDED_UNARY if x.bounded else _UNBOUNDED_UNARY
    op = str(b.rng.choice(ops))
    attrs = {}
    if op in ("Elu", "Celu", "LeakyRelu", "ThresholdedRelu") and b.rng.random() < 0.5:
        attrs["alpha"] = float(np.float32(b.rng.uniform(0.1, 2)))
    if op == "Shrink" and b.rng.random() < 0.5:
        attrs = {"lambd": float(np.float32(b.rng.uniform(0, 1))),
                 "bias": float(np.float32(b.rng.uniform(0, 1)))}
    return b.node(op, [x.name], x.shape, bounded=x.bounded or op in ("Sigmoid", "Tanh"),
                  **attrs)


def _smooth(b: _Builder):
    """Functions that need a bounded argument: exp, softplus, mish, and log/sqrt of a
    positive one."""
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    op = str(b.rng.choice(["Exp", "Softplus", "Mish", "Log", "Sqrt"]))
    if op in ("Log", "Sqrt"):
        one = b.const(np.float32(2.5))
        x = b.node("Add", [b.node("Abs", [x.name], x.shape).name, one], x.shape)
    return b.node(op, [x.name], x.shape, bounded=op != "Exp")


def _broadcast_partner(b: _Builder, shape):
    """A shape that broadcasts with ``shape``: a suffix with some dims set to 1."""
    k = int(b.rng.integers(0, len(shape) + 1))
    sub = list(shape[len(shape) - k:])
    for i in range(len(sub)):
        if b.rng.random() < 0.3:
            sub[i] = 1
    return tuple(sub)


def _binary(b: _Builder):
    x = b.pick()
    op = str(b.rng.choice(["Add", "Sub", "Mul", "Max", "Min", "Div", "PRelu", "Mean"]))
    other = b.pick(pred=lambda v: v.shape == x.shape and v is not x and v.bounded)
    if op == "Div" or other is None or b.rng.random() < 0.5:
        shape = _broadcast_partner(b, x.shape)
        c = b.rng.uniform(0.5, 2, shape) * b.rng.choice([-1, 1], shape)
        if op == "PRelu":
            shape = _broadcast_partner(b, x.shape)
            c = b.rng.uniform(-1, 1, shape)
        y = b.const(c.astype(np.float32))
    else:
        y = other.name
    if b.rng.random() < 0.5 and op not in ("Div", "PRelu"):
        x_name, y = y, x.name
    else:
        x_name = x.name
    bounded = x.bounded and op in ("Max", "Min", "Mean", "PRelu")
    return b.node(op, [x_name, y], x.shape, bounded=bounded)


def _compare(b: _Builder):
    x = b.pick()
    op = str(b.rng.choice(["Greater", "Less", "GreaterOrEqual", "LessOrEqual"]))
    t = b.const(np.float32(b.rng.uniform(-1, 1)))
    cond = b.node(op, [x.name, t], x.shape, dtype="bool")
    if b.rng.random() < 0.3:
        other = b.node("Not", [cond.name], x.shape, dtype="bool")
        cond = b.node(str(b.rng.choice(["And", "Or", "Xor"])), [cond.name, other.name],
                      x.shape, dtype="bool")
    y = b.pick(pred=lambda v: v.shape == x.shape) or x
    return b.node("Where", [cond.name, x.name, y.name], x.shape, bounded=x.bounded and y.bounded)


def _reduce(b: _Builder):
    x = b.pick()
    if b.rng.random() < 0.15:
        axis = int(b.rng.integers(0, len(x.shape)))
        op, keep = str(b.rng.choice(["ArgMax", "ArgMin"])), int(b.rng.integers(0, 2))
        shape = [1 if i == axis else d for i, d in enumerate(x.shape) if keep or i != axis]
        if not shape:
            keep, shape = 1, [1]
        idx = b.node(op, [x.name], shape, dtype="int64", axis=axis, keepdims=keep,
                     select_last_index=int(b.rng.integers(0, 2)))
        return b.node("Cast", [idx.name], shape, to=_onnx_type("float32"), bounded=False)
    op = str(b.rng.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceL1",
                           "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp", "ReduceProd"]))
    if op in ("ReduceLogSumExp", "ReduceProd", "ReduceSumSquare") and not x.bounded:
        op = "ReduceMax"
    nd = len(x.shape)
    norm = {int(a) for a in b.rng.choice(nd, int(b.rng.integers(1, nd + 1)), replace=False)}
    axes = sorted(a - nd if b.rng.random() < 0.5 else a for a in norm)
    if op == "ReduceProd" and np.prod([x.shape[a] for a in norm]) > 8:
        op = "ReduceMean"
    keep = int(b.rng.integers(0, 2))
    shape = [1 if i in norm else d for i, d in enumerate(x.shape)] if keep else \
        [d for i, d in enumerate(x.shape) if i not in norm]
    if not shape:
        keep, shape = 1, [1] * nd
    return b.node(op, [x.name, b.const(np.asarray(axes, np.int64))], shape, keepdims=keep,
                  bounded=op in ("ReduceMean", "ReduceMax", "ReduceMin"))


def _matmul(b: _Builder):
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    k, n = x.shape[-1], int(b.rng.integers(1, 9))
    w = b.const((b.rng.uniform(-1, 1, (k, n)) / max(k, 1)).astype(np.float32))
    if len(x.shape) == 2 and b.rng.random() < 0.5:
        c = b.const(b.rng.uniform(-1, 1, (n,)).astype(np.float32))
        return b.node("Gemm", [x.name, w, c], (x.shape[0], n), alpha=0.5)
    return b.node("MatMul", [x.name, w], x.shape[:-1] + (n,))


def _conv(b: _Builder):
    x = b.pick(pred=lambda v: len(v.shape) == 4 and v.bounded)
    if x is None:
        return None
    n, c, h, w = x.shape
    kh, kw = int(b.rng.integers(1, min(3, h) + 1)), int(b.rng.integers(1, min(3, w) + 1))
    op = str(b.rng.choice(["Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                           "GlobalMaxPool", "ConvTranspose", "LpPool", "DepthToSpace",
                           "SpaceToDepth"]))
    pads = [int(p) for p in b.rng.integers(0, 2, 4)] if b.rng.random() < 0.5 else [0] * 4
    pads = [min(p, k - 1) for p, k in zip(pads, (kh, kw, kh, kw))]
    s = int(b.rng.integers(1, 3))
    oh = (h + pads[0] + pads[2] - kh) // s + 1
    ow = (w + pads[1] + pads[3] - kw) // s + 1
    if op == "ConvTranspose":
        m, d = int(b.rng.integers(1, 4)), int(b.rng.integers(1, 3))
        wt = b.const((b.rng.uniform(-1, 1, (c, m, kh, kw)) / (c * kh * kw)).astype(np.float32))
        th = s * (h - 1) + (kh - 1) * d + 1 - pads[0] - pads[2]
        tw = s * (w - 1) + (kw - 1) * d + 1 - pads[1] - pads[3]
        return b.node(op, [x.name, wt], (n, m, th, tw), kernel_shape=[kh, kw], pads=pads,
                      strides=[s, s], dilations=[d, d])
    if op == "DepthToSpace":
        if c % 4:
            return None
        return b.node(op, [x.name], (n, c // 4, h * 2, w * 2), blocksize=2,
                      mode=str(b.rng.choice(["DCR", "CRD"])))
    if op == "SpaceToDepth":
        if h % 2 or w % 2:
            return None
        return b.node(op, [x.name], (n, c * 4, h // 2, w // 2), blocksize=2)
    if op == "LpPool":
        return b.node(op, [x.name], (n, c, oh, ow), kernel_shape=[kh, kw], pads=pads,
                      strides=[s, s], p=int(b.rng.integers(1, 4)))
    if op.startswith("Global"):
        return b.node(op, [x.name], (n, c, 1, 1))
    if op == "Conv":
        group = c if c > 1 and b.rng.random() < 0.3 else 1
        m = group * int(b.rng.integers(1, 3)) if group > 1 else int(b.rng.integers(1, 6))
        wt = b.const((b.rng.uniform(-1, 1, (m, c // group, kh, kw)) / (c * kh * kw))
                     .astype(np.float32))
        bias = b.const(b.rng.uniform(-1, 1, (m,)).astype(np.float32))
        return b.node("Conv", [x.name, wt, bias], (n, m, oh, ow), kernel_shape=[kh, kw],
                      pads=pads, strides=[s, s], group=group)
    return b.node(op, [x.name], (n, c, oh, ow), kernel_shape=[kh, kw], pads=pads,
                  strides=[s, s])


def _norm(b: _Builder):
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    op = str(b.rng.choice(["Softmax", "LogSoftmax", "LayerNormalization",
                           "BatchNormalization", "InstanceNormalization", "Hardmax",
                           "LpNormalization", "MeanVarianceNormalization"]))
    nd = len(x.shape)
    axis = int(b.rng.integers(-nd, nd))
    if op == "MeanVarianceNormalization":
        # where the values normalized together are all equal, onnxruntime (1.32) returns NaN
        # or -1 (all zeros give NaN: it adds no epsilon), while ONNX's function body gives
        # (x - mean) / (sqrt(0) + 1e-9) = 0, as mlcbook does (tests/frontend/
        # test_onnx_tensor_ops.py; tests/fuzz pins onnxruntime's NaN). So MVN takes a graph
        # input, random floats, over at least two values each: never equal
        x = b.values[int(b.rng.integers(0, len(b.inputs)))]
        nd = len(x.shape)
        axes = sorted(int(a) for a in b.rng.choice(nd, int(b.rng.integers(1, nd + 1)),
                                                    replace=False))
        if np.prod([x.shape[a] for a in axes]) < 2:
            return None
        return b.node(op, [x.name], x.shape, axes=axes)
    if op in ("BatchNormalization", "InstanceNormalization") and nd < 3:
        op = "LayerNormalization"
    if op == "LayerNormalization":
        tail = x.shape[axis % nd:]
        scale = b.const(b.rng.uniform(0.5, 1.5, tail).astype(np.float32))
        return b.node(op, [x.name, scale], x.shape, axis=axis)
    if op == "BatchNormalization":
        c = x.shape[1]
        arrs = [b.rng.uniform(0.5, 1.5, c), b.rng.uniform(-1, 1, c), b.rng.uniform(-1, 1, c),
                b.rng.uniform(0.5, 1.5, c)]
        return b.node(op, [x.name] + [b.const(a.astype(np.float32)) for a in arrs], x.shape)
    if op == "InstanceNormalization":
        c = x.shape[1]
        return b.node(op, [x.name, b.const(b.rng.uniform(0.5, 1.5, c).astype(np.float32)),
                           b.const(b.rng.uniform(-1, 1, c).astype(np.float32))], x.shape)
    if op == "LpNormalization":
        return b.node(op, [x.name], x.shape, axis=axis, p=int(b.rng.integers(1, 3)))
    return b.node(op, [x.name], x.shape, axis=axis)


def _move(b: _Builder):
    x = b.pick()
    nd = len(x.shape)
    op = str(b.rng.choice(["Transpose", "Reshape", "Flatten", "Slice", "Unsqueeze",
                           "Concat", "Pad", "Gather", "Expand", "Tile", "CumSum", "Trilu"]))
    if op == "Transpose":
        perm = [int(p) for p in b.rng.permutation(nd)]
        return b.node(op, [x.name], [x.shape[p] for p in perm], perm=perm, bounded=x.bounded)
    if op == "Reshape":
        shape = [int(np.prod(x.shape))] if nd > 1 else [1, x.shape[0]]
        return b.node(op, [x.name, b.const(np.asarray(shape, np.int64))], shape,
                      bounded=x.bounded)
    if op == "Flatten":
        axis = int(b.rng.integers(0, nd + 1))
        return b.node(op, [x.name], [int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))],
                      axis=axis, bounded=x.bounded)
    if op == "Trilu":
        if nd < 2:
            return None
        k = b.const(np.asarray(int(b.rng.integers(-2, 3)), np.int64))
        return b.node(op, [x.name, k], x.shape, upper=int(b.rng.integers(0, 2)),
                      bounded=x.bounded)
    if op == "Unsqueeze":
        a = int(b.rng.integers(0, nd + 1))
        return b.node(op, [x.name, b.const(np.asarray([a], np.int64))],
                      x.shape[:a] + (1,) + x.shape[a:], bounded=x.bounded)
    axis = int(b.rng.integers(0, nd))
    d = x.shape[axis]
    if op == "Slice":
        start = int(b.rng.integers(0, d))
        end = int(b.rng.integers(start + 1, d + 1))
        shape = list(x.shape)
        shape[axis] = end - start
        return b.node(op, [x.name] + [b.const(np.asarray([v], np.int64))
                                      for v in (start, end, axis)], shape, bounded=x.bounded)
    if op == "Concat":
        y = b.pick(pred=lambda v: len(v.shape) == nd and all(
            v.shape[i] == x.shape[i] for i in range(nd) if i != axis)) or x
        shape = list(x.shape)
        shape[axis] += y.shape[axis]
        return b.node(op, [x.name, y.name], shape, axis=axis, bounded=x.bounded and y.bounded)
    if op == "Pad":
        pads = [int(p) for p in b.rng.integers(0, 3, 2 * nd)]
        mode = str(b.rng.choice(["constant", "edge", "reflect"]))
        if mode == "reflect":
            pads = [min(p, x.shape[i % nd] - 1) for i, p in enumerate(pads)]
        shape = [d + pads[i] + pads[i + nd] for i, d in enumerate(x.shape)]
        return b.node(op, [x.name, b.const(np.asarray(pads, np.int64))], shape, mode=mode,
                      bounded=x.bounded)
    if op == "Gather":
        rank = int(b.rng.choice(GATHER_INDEX_RANKS))
        idx = b.rng.integers(-d, d, tuple(int(k) for k in b.rng.integers(1, 4, rank)))
        shape = x.shape[:axis] + idx.shape + x.shape[axis + 1:]
        return b.node(op, [x.name, b.const(idx.astype(np.int64))], shape, axis=axis,
                      bounded=x.bounded)
    if op == "Expand":
        shape = tuple(int(b.rng.integers(1, 4)) if s == 1 else s for s in x.shape)
        lead = tuple(int(k) for k in b.rng.integers(1, 3, int(b.rng.integers(0, 2))))
        return b.node(op, [x.name, b.const(np.asarray(lead + shape, np.int64))], lead + shape,
                      bounded=x.bounded)
    if op == "Tile":
        reps = [int(r) for r in b.rng.integers(1, 3, nd)]
        return b.node(op, [x.name, b.const(np.asarray(reps, np.int64))],
                      [s * r for s, r in zip(x.shape, reps)], bounded=x.bounded)
    return b.node("CumSum", [x.name, b.const(np.asarray(axis, np.int64))], x.shape,
                  exclusive=int(b.rng.integers(0, 2)), reverse=int(b.rng.integers(0, 2)),
                  bounded=False)


def _index(b: _Builder):
    """Element gathers and scatters, Resize and Einsum: ops whose index arithmetic is the
    risk. Scatter indices are distinct, so the result does not depend on update order."""
    x = b.pick()
    nd, rng = len(x.shape), b.rng
    op = str(rng.choice(["GatherElements", "GatherND", "ScatterElements", "ScatterND",
                         "Resize", "Einsum"]))
    axis = int(rng.integers(0, nd))
    d = x.shape[axis]
    if op == "GatherElements":
        shape = tuple(int(rng.integers(1, 4)) if i == axis else s for i, s in enumerate(x.shape))
        idx = b.const(rng.integers(-d, d, shape).astype(np.int64))
        return b.node(op, [x.name, idx], shape, axis=axis, bounded=x.bounded)
    if op == "GatherND":
        k = int(rng.integers(1, nd + 1))
        lead = tuple(int(m) for m in rng.integers(1, 4, int(rng.integers(1, 3))))
        idx = np.stack([rng.integers(-s, s, lead) for s in x.shape[:k]], axis=-1)
        return b.node(op, [x.name, b.const(idx.astype(np.int64))], lead + x.shape[k:],
                      bounded=x.bounded)
    reduction = str(rng.choice(["none", "add", "mul", "max", "min"]))
    if op == "ScatterElements":
        m = int(rng.integers(1, d + 1))
        line = rng.permutation(d)[:m] - d * rng.integers(0, 2, m)   # some negative
        shape = tuple(m if i == axis else s for i, s in enumerate(x.shape))
        idx = np.broadcast_to(line.reshape([m if i == axis else 1 for i in range(nd)]), shape)
        upd = b.const(rng.uniform(-1, 1, shape).astype(np.float32))
        return b.node(op, [x.name, b.const(idx.astype(np.int64)), upd], x.shape, axis=axis,
                      reduction=reduction, bounded=x.bounded and reduction in ("none", "max",
                                                                                "min"))
    if op == "ScatterND":
        k = int(rng.integers(1, nd + 1))
        cells = int(np.prod(x.shape[:k]))
        flat = rng.permutation(cells)[:int(rng.integers(1, min(cells, 4) + 1))]
        idx = np.stack(np.unravel_index(flat, x.shape[:k]), axis=-1)
        upd = b.const(rng.uniform(-1, 1, (len(flat),) + x.shape[k:]).astype(np.float32))
        return b.node(op, [x.name, b.const(idx.astype(np.int64)), upd], x.shape,
                      reduction=reduction, bounded=x.bounded and reduction in ("none", "max",
                                                                                "min"))
    if op == "Resize":
        # onnxruntime resizes linearly only the last two axes of 2-d and 4-d tensors
        if nd not in (2, 4):
            return None
        sizes = x.shape[:nd - 2] + tuple(int(rng.integers(1, 2 * s + 2)) for s in x.shape[-2:])
        mode = str(rng.choice(["nearest", "linear"]))
        attrs = {"mode": mode, "coordinate_transformation_mode": str(rng.choice(
            ["half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"]))}
        if mode == "nearest":
            attrs["nearest_mode"] = str(rng.choice(["round_prefer_floor", "round_prefer_ceil",
                                                    "floor", "ceil"]))
        return b.node(op, [x.name, "", "", b.const(np.asarray(sizes, np.int64))], sizes,
                      bounded=x.bounded, **attrs)
    letters = "abcdefgh"[:nd]
    if nd >= 2 and rng.random() < 0.5:    # (batched) matmul with a constant
        n = int(rng.integers(1, 5))
        w = b.const((rng.uniform(-1, 1, (x.shape[-1], n)) / x.shape[-1]).astype(np.float32))
        eq = f"{letters},{letters[-1]}z->{letters[:-1]}z"
        return b.node(op, [x.name, w], x.shape[:-1] + (n,), equation=eq, bounded=x.bounded)
    keep = [i for i in rng.permutation(nd) if rng.random() < 0.7]
    eq = f"{letters}->" + "".join(letters[i] for i in keep)
    return b.node(op, [x.name], tuple(x.shape[i] for i in keep), equation=eq,
                  bounded=x.bounded and len(keep) == nd)


def _integer(b: _Builder):
    """A detour through another dtype: int32/int64 arithmetic or float64."""
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    dtype = str(b.rng.choice(["int32", "int64", "float64"]))
    y = b.node("Cast", [b.node("Round", [x.name], x.shape).name], x.shape, dtype=dtype,
               to=_onnx_type(dtype))
    op = str(b.rng.choice(["Add", "Mul", "Max", "Min", "Sub"]))
    c = b.const(b.rng.integers(-3, 4, _broadcast_partner(b, x.shape)).astype(dtype))
    z = b.node(op, [y.name, c], x.shape, dtype=dtype)
    if dtype != "float64" and b.rng.random() < 0.5:
        z = b.node(str(b.rng.choice(["Abs", "Neg", "Sign"])), [z.name], x.shape, dtype=dtype)
    return b.node("Cast", [z.name], x.shape, to=_onnx_type("float32"), bounded=op != "Mul")


_GENERATORS = ((_unary, 5), (_smooth, 2), (_binary, 5), (_compare, 2), (_reduce, 2),
               (_matmul, 2), (_conv, 2), (_norm, 2), (_move, 4), (_index, 2), (_integer, 1))


def _large(b: _Builder) -> None:
    """Long reductions, where float32 accumulation order matters: ReduceMean,
    LayerNormalization or MeanVarianceNormalization over up to 2**21 elements, along rows
    (the last axis) or, for the mean and MVN, down columns (the first axis)."""
    rows = int(b.rng.choice([1, 2, 4, 16]))
    n = int(b.rng.choice([1 << 16, 1 << 19, 1 << 21])) // rows
    op = str(b.rng.choice(["ReduceMean", "LayerNormalization", "MeanVarianceNormalization"]))
    down = op != "LayerNormalization" and b.rng.random() < 0.5
    x = b.add_input((n, rows) if down else (rows, n))
    axis = 0 if down else 1
    if op == "ReduceMean":
        b.node(op, [x.name, b.const(np.asarray([axis], np.int64))],
               (1, rows) if down else (rows, 1))
    elif op == "MeanVarianceNormalization":
        b.node(op, [x.name], x.shape, axes=[axis])
    else:
        b.node(op, [x.name, b.const(np.ones(n, np.float32))], x.shape, axis=-1)


def random_model(rng: np.random.Generator, max_nodes: int = 8, large: float = 0.01,
                 old: float = 0.05) -> Case:
    """A random model of up to ``max_nodes`` generator steps (a fraction ``large`` of models
    are single long reductions instead, and a fraction ``old`` small models at an old opset:
    :func:`~mlcbook.fuzz.hard.old_opset_model`) and its inputs."""
    from onnx import helper

    from ..frontend.onnx_ops import CONVERTERS
    b = _Builder(rng, frozenset(CONVERTERS))
    if rng.random() < large:
        _large(b)
    elif rng.random() < old:
        return Case(*old_opset_model(rng))
    else:
        nd = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 7, nd))
        b.add_input(shape)
        if rng.random() < 0.3:
            b.add_input(_broadcast_partner(b, shape) or shape)
        fns, weights = zip(*(_GENERATORS + GENERATORS))
        p = np.asarray(weights, np.float64) / sum(weights)
        for _ in range(int(rng.integers(1, max_nodes + 1))):
            mark = len(b.nodes), len(b.values), len(b.inits)
            try:
                fns[rng.choice(len(fns), p=p)](b)
            except _Unsupported:  # an op mlcbook does not import: undo the step
                del b.nodes[mark[0]:], b.values[mark[1]:], b.inits[mark[2]:]
        if not b.nodes:
            b.node("Relu", [b.values[-1].name], b.values[-1].shape)
    produced = {v.name for v in b.values[len(b.inputs):]}
    used = {i for n in b.nodes for i in n.input}
    outs = [v for v in b.values if v.name in produced and v.dtype != "bool" and
            (v.name not in used or v.name in b.keep_outputs)] or [b.values[-1]]
    graph = helper.make_graph(
        b.nodes, "fuzz", b.input_infos,
        [helper.make_tensor_value_info(v.name, _onnx_type(v.dtype), v.shape) for v in outs],
        initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return Case(model, b.inputs, [n.op_type for n in b.nodes])
