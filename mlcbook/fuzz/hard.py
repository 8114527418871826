"""Generators for the shapes of model that hostile testers found and plain random DAGs
rarely make: concats of concats and concats that are also model outputs, convolutions
padded wider than their kernel, ops of nine or more inputs, long elementwise chains,
integer dtypes through the elementwise ops, and whole models at an old opset whose ops
meant something else then.

    >>> model, inputs, ops = old_opset_model(np.random.default_rng(0))
    >>> model.opset_import[0].version < 13
    True

Each generator adds nodes to a :class:`~mlcbook.fuzz.generate._Builder` like those of
:mod:`mlcbook.fuzz.generate`, or returns None when the model so far offers no input for it.
"""

from __future__ import annotations

import functools

import numpy as np

#: integer dtypes sent through the elementwise ops (those onnxruntime runs, see _ort_runs)
INT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64")
#: elementwise ops on integers: (op, inputs, attrs); shifts and bitwise ops on any width
_INT_OPS = (("Add", 2, {}), ("Sub", 2, {}), ("Mul", 2, {}), ("Div", 2, {}),
            ("Mod", 2, {}), ("Mod", 2, {"fmod": 1}), ("Max", 2, {}), ("Min", 2, {}),
            ("Abs", 1, {}), ("Neg", 1, {}), ("Sign", 1, {}), ("Relu", 1, {}),
            ("BitShift", 2, {"direction": "LEFT"}), ("BitShift", 2, {"direction": "RIGHT"}),
            ("BitwiseAnd", 2, {}), ("BitwiseOr", 2, {}), ("BitwiseXor", 2, {}),
            ("BitwiseNot", 1, {}), ("Pow", 2, {}), ("Clip", 3, {}), ("Equal", 2, {}),
            ("Greater", 2, {}), ("Less", 2, {}), ("GreaterOrEqual", 2, {}),
            ("LessOrEqual", 2, {}), ("Sum", 3, {}), ("Max", 3, {}), ("PRelu", 2, {}),
            ("Shrink", 1, {"bias": 0.5, "lambd": 1.5}))
_COMPARISONS = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual")
_GROWING = ("Mul", "Pow", "BitShift", "Sum")
#: elementwise ops of a long chain: bounded in, bounded out
_CHAIN_OPS = ("Relu", "Neg", "Abs", "Sigmoid", "Tanh", "Sin", "Cos", "Atan", "Softsign")


def _onnx_type(dtype: str) -> int:
    from onnx import helper
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@functools.lru_cache(maxsize=None)
def _ort_runs(op: str, arity: int, attrs: tuple, dtype: str) -> bool:
    """Whether onnxruntime has a kernel for ``op`` on ``dtype`` (probed once, on a 2-element
    model): the generator only makes models onnxruntime can run."""
    from onnx import helper
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    ins = [f"i{k}" for k in range(arity)]
    shapes = [[2]] + [[] if op == "Clip" else [2]] * (arity - 1)   # Clip's bounds are scalars
    out_dtype = "bool" if op in _COMPARISONS else dtype
    node = helper.make_node(op, ins, ["o"], **dict(attrs))
    graph = helper.make_graph(
        [node], "probe", [helper.make_tensor_value_info(i, _onnx_type(dtype), s)
                          for i, s in zip(ins, shapes)],
        [helper.make_tensor_value_info("o", _onnx_type(out_dtype), [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        sess.run(None, {i: np.ones(s, dtype) for i, s in zip(ins, shapes)})
    except Exception:  # noqa: BLE001 - NOT_IMPLEMENTED and friends: no kernel for this type
        return False
    return True


def nested_concat(b):
    """A concat whose input is another concat, sometimes kept as a model output too."""
    x = b.pick()
    if x is None:
        return None
    nd = len(x.shape)
    axis = int(b.rng.integers(0, nd))
    parts = [x.name, x.name] if b.rng.random() < 0.5 else [x.name]
    c = b.const(b.rng.uniform(-1, 1, x.shape).astype(np.float32))
    first_shape = list(x.shape)
    first_shape[axis] *= len(parts) + 1
    inner = b.node("Concat", parts + [c], first_shape, axis=axis, bounded=x.bounded)
    if b.rng.random() < 0.5:
        b.keep_outputs.add(inner.name)            # an output and an input of the next concat
    other = b.node("Relu", [x.name], x.shape, bounded=x.bounded)
    outer_shape = list(first_shape)
    outer_shape[axis] += x.shape[axis]
    order = [inner.name, other.name] if b.rng.random() < 0.5 else [other.name, inner.name]
    outer = b.node("Concat", order, outer_shape, axis=axis, bounded=x.bounded)
    if b.rng.random() < 0.3:
        b.keep_outputs.add(outer.name)
        return b.node("Tanh", [outer.name], outer.shape)
    return outer


def wide_pad_conv(b):
    """A convolution or pooling padded wider than its kernel (pad up to kernel + 2)."""
    x = b.pick(pred=lambda v: len(v.shape) == 4 and v.bounded)
    if x is None:
        x = b.add_input(tuple(int(d) for d in b.rng.integers(1, 7, 4)))
    n, c, h, w = x.shape
    kh, kw = int(b.rng.integers(1, min(3, h) + 1)), int(b.rng.integers(1, min(3, w) + 1))
    pads = [int(b.rng.integers(k, k + 3)) for k in (kh, kw, kh, kw)]
    s = int(b.rng.integers(1, 3))
    oh = (h + pads[0] + pads[2] - kh) // s + 1
    ow = (w + pads[1] + pads[3] - kw) // s + 1
    if b.rng.random() < 0.8:
        group = c if c > 1 and b.rng.random() < 0.3 else 1
        m = group * int(b.rng.integers(1, 3)) if group > 1 else int(b.rng.integers(1, 18))
        wt = b.const((b.rng.uniform(-1, 1, (m, c // group, kh, kw)) / (c * kh * kw))
                     .astype(np.float32))
        ins = [x.name, wt]
        if b.rng.random() < 0.7:
            ins.append(b.const(b.rng.uniform(-1, 1, (m,)).astype(np.float32)))
        return b.node("Conv", ins, (n, m, oh, ow), kernel_shape=[kh, kw], pads=pads,
                      strides=[s, s], group=group)
    # pooling only allows pads smaller than the kernel; pad the input explicitly instead
    padded = b.node("Pad", [x.name, b.const(np.asarray([0, 0, pads[0], pads[1], 0, 0, pads[2],
                                                        pads[3]], np.int64))],
                    (n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]))
    return b.node("AveragePool", [padded.name], (n, c, oh, ow), kernel_shape=[kh, kw],
                  strides=[s, s])


def many_inputs(b):
    """Concat, Sum, Max, Min or Mean of 9 to 12 inputs (values, repeats and constants)."""
    x = b.pick()
    if x is None:
        return None
    k = int(b.rng.integers(9, 13))
    op = str(b.rng.choice(["Concat", "Sum", "Max", "Min", "Mean"]))
    names = []
    for _ in range(k):
        if b.rng.random() < 0.4:
            names.append(x.name)
        else:
            names.append(b.const(b.rng.uniform(-1, 1, x.shape).astype(np.float32)))
    if op == "Concat":
        axis = int(b.rng.integers(0, len(x.shape)))
        shape = list(x.shape)
        shape[axis] *= k
        return b.node(op, names, shape, axis=axis, bounded=x.bounded)
    return b.node(op, names, x.shape, bounded=x.bounded and op != "Sum")


def long_chain(b):
    """A chain of 33 to 150 bounded elementwise ops: longer than one fused kernel takes."""
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    v = x
    for _ in range(int(b.rng.integers(33, 151))):
        op = str(b.rng.choice(_CHAIN_OPS))
        v = b.node(op, [v.name], v.shape)
    return v


def integer_elementwise(b):
    """A value cast to an integer dtype, through one or two integer elementwise ops, and
    back to float32. Values stay small: no op overflows any of the dtypes."""
    x = b.pick(pred=lambda v: v.bounded)
    if x is None:
        return None
    dtype = str(b.rng.choice(INT_DTYPES))
    unsigned = dtype.startswith("u")
    runs = [t for t in _INT_OPS if _ort_runs(t[0], t[1], tuple(sorted(t[2].items())), dtype)
            and not (unsigned and t[0] == "Neg")]
    # ops that grow magnitudes need Min and Max after them, to stay clear of overflow
    can_clamp = {"Min", "Max"} <= {t[0] for t in runs if t[1] == 2}
    usable = [t for t in runs if can_clamp or t[0] not in _GROWING]
    if not usable:
        return None
    src = b.node("Abs", [x.name], x.shape).name if unsigned else x.name
    scaled = b.node("Mul", [src, b.const(np.float32(2.0))], x.shape).name
    v = b.node("Cast", [b.node("Round", [scaled], x.shape).name], x.shape, dtype=dtype,
               to=_onnx_type(dtype))
    for _ in range(int(b.rng.integers(1, 3))):
        op, arity, attrs = usable[int(b.rng.integers(len(usable)))]
        v = _int_op(b, v, op, arity, attrs, dtype)
    return b.node("Cast", [v.name], x.shape, to=_onnx_type("float32"), bounded=False)


def _int_op(b, v, op: str, arity: int, attrs: dict, dtype: str):
    lo = 0 if dtype.startswith("u") else -3
    if op in ("Div", "Mod"):
        others = [b.const(b.rng.choice([k for k in range(lo, 4) if k], v.shape).astype(dtype))]
    elif op == "BitShift":
        others = [b.const(b.rng.integers(0, 3, v.shape).astype(dtype))]
    elif op == "Pow":
        others = [b.const(b.rng.integers(0, 3, v.shape).astype(dtype))]
    elif op == "Clip":
        others = [b.const(np.asarray(lo, dtype)), b.const(np.asarray(3, dtype))]
    else:
        others = [b.const(b.rng.integers(lo, 4, v.shape).astype(dtype))
                  for _ in range(arity - 1)]
    out = b.node(op, [v.name] + others, v.shape,
                 dtype="bool" if op in _COMPARISONS else dtype, **attrs)
    if out.dtype == "bool":
        return b.node("Cast", [out.name], v.shape, dtype=dtype, to=_onnx_type(dtype))
    if op in _GROWING:                             # keep magnitudes small for the next op
        low = b.node("Min", [out.name, b.const(np.asarray(12, dtype))], v.shape, dtype=dtype)
        return b.node("Max", [low.name, b.const(np.asarray(lo * 4, dtype))], v.shape,
                      dtype=dtype)
    return out


# --- whole models at an old opset --------------------------------------------------------------
def old_opset_model(rng: np.random.Generator):
    """A small model at the opset before an op's meaning changed: Hardmax, Softmax and
    LogSoftmax before 13 (they flatten to 2-d at ``axis``), Resize at 10 and Upsample at 9
    (their linear mode had other coordinates), Clip before 11 (bounds as attributes).
    Returns ``(model, inputs, op types)``."""
    from onnx import helper, numpy_helper

    kind = str(rng.choice(["Hardmax", "Softmax", "LogSoftmax", "Resize", "Upsample", "Clip"]))
    nd = 4 if kind in ("Resize", "Upsample") else int(rng.integers(2, 5))
    shape = tuple(int(d) for d in rng.integers(2, 6, nd))
    x = rng.uniform(-2, 2, shape).astype(np.float32)
    # Neg or Tanh first (not Relu, whose zeros would tie for Hardmax's maximum)
    inits = []
    nodes = [helper.make_node(str(rng.choice(["Neg", "Tanh"])), ["x0"], ["r"])]
    if kind in ("Hardmax", "Softmax", "LogSoftmax"):
        opset = int(rng.choice([9, 11, 12]))
        axis = int(rng.integers(-nd if opset >= 11 else 0, nd))   # negative from opset 11
        nodes.append(helper.make_node(kind, ["r"], ["y"], axis=axis))
        out = shape
    elif kind == "Clip":
        opset = int(rng.choice([6, 9, 10]))
        lo = float(rng.uniform(-1.5, 0))
        attrs = {"min": lo, "max": float(rng.uniform(0, 1.5))} if rng.random() < 0.7 else {}
        nodes.append(helper.make_node("Clip", ["r"], ["y"], **attrs))
        out = shape
    else:
        opset = 10 if kind == "Resize" else 9
        scales = np.asarray([1, 1, int(rng.integers(1, 4)), int(rng.integers(1, 4))],
                            np.float32)
        inits.append(numpy_helper.from_array(scales, "scales"))
        mode = str(rng.choice(["nearest", "linear"]))
        nodes.append(helper.make_node(kind, ["r", "scales"], ["y"], mode=mode))
        out = tuple(int(d * s) for d, s in zip(shape, scales))
    graph = helper.make_graph(
        nodes, "old_opset", [helper.make_tensor_value_info("x0", _onnx_type("float32"), shape)],
        [helper.make_tensor_value_info("y", _onnx_type("float32"), out)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model, {"x0": x}, [n.op_type for n in nodes]


#: (generator, weight) pairs that :mod:`mlcbook.fuzz.generate` adds to its own
GENERATORS = ((nested_concat, 1), (wide_pad_conv, 1), (many_inputs, 1), (long_chain, 0.3),
              (integer_elementwise, 2))

__all__ = ["GENERATORS", "INT_DTYPES", "old_opset_model", "nested_concat", "wide_pad_conv",
           "many_inputs", "long_chain", "integer_elementwise"]
