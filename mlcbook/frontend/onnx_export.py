"""Export a graph function to ONNX: ``mb.to_onnx(func)`` -> an ``onnx.ModelProto`` that
onnxruntime (or ``mb.from_onnx``) runs with the same results. Named weights become
initializers under their names; each op call becomes one ONNX node (opset 17). The
training forms export as ONNX's: ``batch_norm_train`` as BatchNormalization with
``training_mode=1``, ``dropout`` as Dropout with ``training_mode`` true and its seed.

    >>> model = mb.to_onnx(trainer.model())          # a trained model, for deployment
    >>> onnx.save(model, "digits.onnx")

Ops with no ONNX counterpart here (and gemm with panel-packed weights, a compiled layout)
raise :class:`~mlcbook.errors.UnsupportedModelError` naming the op.
"""

from __future__ import annotations

import numpy as np

from ..errors import UnsupportedModelError
from ..graph.expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
from ..ops import get as get_op
from ..ops.declare import declared_onnx_ops, onnx_name

#: the opset of an exported model, unless one of its ops is newer (Gelu: 20)
OPSET = 17


def _since(op_type: str) -> int:
    """:data:`OPSET` if it has ``op_type``, else the first opset that has it."""
    from onnx import defs
    try:
        defs.get_schema(op_type, OPSET)
        return OPSET
    except defs.SchemaError:
        return defs.get_schema(op_type).since_version

_SAME = {"maximum": "Max", "minimum": "Min"}
# op -> (ONNX op, {our attribute: ONNX attribute})
_RENAMED = {
    "gemm": ("Gemm", {"alpha": "alpha", "beta": "beta", "trans_a": "transA",
                      "trans_b": "transB"}),
    "avg_pool": ("AveragePool", {"kernel_shape": "kernel_shape", "strides": "strides",
                                 "pads": "pads", "ceil_mode": "ceil_mode",
                                 "count_include_pad": "count_include_pad"}),
}


class _Exporter:
    def __init__(self):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.names: dict[int, str] = {}
        self.nodes, self.inits = [], []
        self.taken: set[str] = set()
        self.opset = OPSET
        self.domains: set[str] = set()   # of the ops outside ONNX's own (version 1 each)

    def fresh(self, base: str) -> str:
        name, k = base or "v", 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name

    def const(self, data: np.ndarray, base: str) -> str:
        name = self.fresh(base)
        self.inits.append(self.numpy_helper.from_array(np.asarray(data), name))
        return name

    def node(self, op_type: str, inputs, name: str, domain: str = "", **attrs) -> str:
        out = self.fresh(name or op_type.lower())
        attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs.items()}
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], name=out,
                                                domain=domain or None, **attrs))
        return out

    def call(self, n: Call) -> str:
        # (dropout's counter, its second input, is not exported)
        args = [self.names[id(a)] for a in (n.args[:1] if n.op == "dropout" else n.args)]
        if get_op(n.op).onnx is not None:
            domain, op_type = onnx_name(get_op(n.op))
            if domain:
                self.domains.add(domain)
            else:
                self.opset = max(self.opset, _since(op_type))
            return self.node(op_type, args, n.name, domain, **dict(n.attrs))
        if n.op in _SAME:
            return self.node(_SAME[n.op], args, n.name)
        if n.op == "gemm" and n.attrs["b_panel"]:
            raise UnsupportedModelError(
                f"to_onnx: gemm {n.name!r} has panel-packed weights (b_panel), mlcbook's "
                "compiled layout. Instead: export the graph before mb.compile packs it")
        if n.op in _RENAMED:
            op_type, names = _RENAMED[n.op]
            attrs = {names[k]: v for k, v in n.attrs.items() if k in names}
            return self.node(op_type, args, n.name, **attrs)
        if n.op in ("reshape", "squeeze", "unsqueeze"):
            shape = self.const(np.array(n.shape, np.int64), f"{n.name}_shape")
            return self.node("Reshape", [args[0], shape], n.name)
        if n.op == "sum":
            extra = [] if n.attrs.get("axes") is None else \
                [self.const(np.array(n.attrs["axes"], np.int64), f"{n.name}_axes")]
            return self.node("ReduceSum", args + extra, n.name, keepdims=n.attrs["keepdims"])
        if n.op == "batch_norm_train":
            # ONNX's training mode has three outputs: y and the updated running statistics
            out = self.fresh(n.name or "batch_norm")
            stats = [self.fresh(f"{out}_running_{s}") for s in ("mean", "var")]
            self.nodes.append(self.helper.make_node(
                "BatchNormalization", args, [out] + stats, name=out, training_mode=1,
                epsilon=n.attrs["epsilon"], momentum=n.attrs["momentum"]))
            return out
        if n.op == "dropout":
            # the counter is mlcbook's buffer; ONNX's Dropout draws its own masks
            ratio = self.const(np.array(n.attrs["ratio"], n.args[0].dtype), f"{n.name}_ratio")
            training = self.const(np.array(True), f"{n.name}_training_mode")
            return self.node("Dropout", [args[0], ratio, training], n.name,
                             seed=int(n.attrs["seed"]))
        if n.op == "cast":
            from onnx import helper
            return self.node("Cast", args, n.name,
                             to=helper.np_dtype_to_tensor_dtype(np.dtype(n.attrs["dtype"])))
        raise UnsupportedModelError(f"to_onnx: the op {n.op!r} (call {n.name!r}) has no ONNX "
                                    "export yet; supported: " +
                                    ", ".join(sorted(set(_SAME) | set(_RENAMED)
                                                     | {op.name for op in declared_onnx_ops().values()})))


def to_onnx(func: Function, name: str | None = None):
    """``func`` (a graph Function, or a module's main) as an ONNX ModelProto."""
    from onnx import checker, helper

    from ..graph.interpret import main_function
    func, _ = main_function(func)
    ex = _Exporter()

    def info(n: str, t):
        return helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
            np.dtype(t.dtype)), list(t.shape))

    inputs = []
    for p in func.params:
        ex.names[id(p)] = ex.fresh(p.name)
        inputs.append(info(ex.names[id(p)], p.type))
    # dropout's counter is mlcbook's buffer: ONNX's Dropout has none
    counters = {id(c.args[1]) for c in func.calls() if getattr(c, "op", "") == "dropout"}
    for n in post_order(func.body):
        if id(n) in ex.names or id(n) in counters:
            continue
        if isinstance(n, Constant):
            ex.names[id(n)] = ex.const(n.data, n.name or "const")
        elif isinstance(n, Call):
            ex.names[id(n)] = ex.call(n)
        elif isinstance(n, (Tuple, TupleGetItem, Var)):
            if not isinstance(n, Tuple) or n is not func.body:
                raise UnsupportedModelError(f"to_onnx: cannot export {n!r}; export functions "
                                            "of op calls returning a tensor or a tuple")
        else:
            raise UnsupportedModelError(f"to_onnx: cannot export {n!r} (legalized graphs "
                                        "call loop-level kernels; export before compiling)")
    outs = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    outputs = [info(ex.names[id(o)], o.type) for o in outs]
    graph = helper.make_graph(ex.nodes, name or func.name, inputs, outputs, ex.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ex.opset)] + [
        helper.make_opsetid(d, 1) for d in sorted(ex.domains)],
                              producer_name="mlcbook")
    model.ir_version = 8
    checker.check_model(model)
    return model


__all__ = ["to_onnx"]
