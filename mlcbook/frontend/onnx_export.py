"""Export a graph function to ONNX: ``mb.to_onnx(func)`` -> an ``onnx.ModelProto`` that
onnxruntime (or ``mb.from_onnx``) runs with the same results. Named weights become
initializers under their names; each op call becomes one ONNX node (opset 17, or the first
opset that has all the model's ops, whose nodes then all take that opset's form). The
training forms export as ONNX's: ``batch_norm_train`` as BatchNormalization with
``training_mode=1``, ``dropout`` as Dropout with ``training_mode`` true and its seed.

    >>> model = mb.to_onnx(trainer.model())          # a trained model, for deployment
    >>> onnx.save(model, "digits.onnx")

A declared op exports as its ONNX op, its attributes as its declaration maps them
(:class:`~mlcbook.ops.onnx_attrs.OnnxAttrs`), one ONNX output per item of a tuple it returns
(where its mapping ``places`` them: ``max_pool_indices`` is MaxPool's output 1).
Ops with no ONNX counterpart here (and gemm with panel-packed weights, a compiled layout)
raise :class:`~mlcbook.errors.UnsupportedModelError` naming the op.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, UnsupportedModelError
from ..graph.expr import Call, Constant, Function, Tuple, TupleGetItem, Var, post_order
from ..ops import TupleType
from ..ops import get as get_op
from ..ops.declare import declared_onnx_ops, onnx_name
from ..ops.onnx_attrs import SAME_NAMES
from .onnx_context import DTYPES

#: the opset of an exported model, unless one of its ops is newer (Gelu: 20)
OPSET = 17


def _since(op_type: str, attrs=()) -> int:
    """:data:`OPSET` if its ``op_type`` has the attributes ``attrs``, else the first later
    opset whose ``op_type`` has them (Gelu: 20; AveragePool with dilations: 19)."""
    from onnx import defs
    for opset in range(OPSET, defs.onnx_opset_version() + 1):
        try:
            schema = defs.get_schema(op_type, opset)
        except defs.SchemaError:
            continue
        if set(attrs) <= set(schema.attributes):
            return opset
    return OPSET        # (the checker names what is wrong)


#: mlcbook's dtypes -> ONNX's element type numbers
_ELEMENT_TYPES = {dtype: number for number, dtype in DTYPES.items()}


def _onnx_form(n: Call, opset: int | None) -> tuple[dict, dict]:
    """The attributes of the ONNX node of the declared op call ``n`` at ``opset`` (None:
    the newest), and the arrays of the inputs its attributes become: input index -> (attribute,
    array)."""
    op = get_op(n.op)
    form, attrs = op.onnx_attrs or SAME_NAMES, dict(n.attrs)
    for a, why in form.local.items():
        value = attrs.pop(a, None)
        if why is not None and value is not None and value != op.attrs[a]:
            raise UnsupportedModelError(f"to_onnx: {n.op} {n.name!r} has {a}={value!r}, {why}")
    if form.export is not None:
        try:    # (a value with no ONNX form)
            attrs.update(form.export(n.attrs, [a.type for a in n.args], opset))
        except OpAttributeError as e:
            raise UnsupportedModelError(f"to_onnx: {n.op} {n.name!r}: {e.message}") from None
    for a in form.dtypes:
        if attrs.get(a) is not None:
            attrs[a] = _ELEMENT_TYPES[attrs[a]]
    inputs = {}
    like = n.args[0].dtype if n.args else n.type.dtype     # (an op of no inputs: its output's)
    for a, i in form.input_forms().items():
        value = attrs.pop(a, None)
        if value is not None and opset is not None and opset < i.since:
            attrs[a] = value            # an attribute still at this opset
        elif value is not None:
            inputs[i.index] = (a, i.array(value, like))
    return {form.onnx_name(k): v for k, v in attrs.items() if v is not None}, inputs


def _opset(func: Function) -> int:
    """The opset of ``func``'s model: :data:`OPSET`, or the first one that has every ONNX op
    of its calls with their attributes (Gelu: 20)."""
    needs = [OPSET]
    for n in func.calls():
        op = get_op(n.op)
        if op.onnx is not None and not onnx_name(op)[0]:
            form = op.onnx_attrs or SAME_NAMES
            needs += [_since(onnx_name(op)[1], _onnx_form(n, None)[0]),
                      form.first_opset(n.attrs, [a.type for a in n.args])]
    return max(needs)


class _Exporter:
    def __init__(self, opset: int):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.names: dict[int, str] = {}
        self.nodes, self.inits = [], []
        self.taken: set[str] = set()
        self.opset = opset      # one for the whole model: a node's form may depend on it
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

    def node(self, op_type: str, inputs, name: str, domain: str = "", outputs: int = 1,
             **attrs) -> str | list[str]:
        """Add a node; its output's name (a list of ``outputs`` names if more than one)."""
        out = self.fresh(name or op_type.lower())
        outs = [out] + [self.fresh(f"{out}_{k}") for k in range(1, outputs)]
        attrs = {k: list(v) if isinstance(v, tuple) else self.numpy_helper.from_array(v)
                 if isinstance(v, np.ndarray) else v for k, v in attrs.items()}
        self.nodes.append(self.helper.make_node(op_type, list(inputs), outs, name=out,
                                                domain=domain or None, **attrs))
        return outs if outputs > 1 else out

    def call(self, n: Call) -> str:
        # (dropout's counter, its second input, is not exported)
        args = [self.names[id(a)] for a in (n.args[:1] if n.op == "dropout" else n.args)]
        op = get_op(n.op)
        if op.onnx is not None:
            domain, op_type = onnx_name(op)
            attrs, inputs = _onnx_form(n, self.opset)
            form = op.onnx_attrs or SAME_NAMES
            outputs = len(n.type.fields) if isinstance(n.type, TupleType) else 1
            ins, outs = form.places(n.attrs, len(args)) if form.places else (None, None)
            named = dict(zip(ins or range(len(args)), args))
            for k, (a, value) in sorted(inputs.items()):
                named[k] = self.const(value, f"{n.name}_{a}")
            # (an input left out is named ""; an output the op has not is left unused)
            args = [named.get(k, "") for k in range(max(named, default=-1) + 1)]
            if domain:
                self.domains.add(domain)
            outs = outs or range(outputs)
            names = self.node(op_type, args, n.name, domain, max(outs) + 1, **attrs)
            names = names if isinstance(names, list) else [names]
            return [names[k] for k in outs] if outputs > 1 else names[outs[0]]
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
        raise UnsupportedModelError(f"to_onnx: the op {n.op!r} (call {n.name!r}) has no ONNX "
                                    "export yet; supported: " + ", ".join(sorted(
                                        {"batch_norm_train", "dropout"}
                                        | {op.name for op in declared_onnx_ops().values()})))


def to_onnx(func: Function, name: str | None = None):
    """``func`` (a graph Function, or a module's main) as an ONNX ModelProto."""
    from onnx import checker, helper

    from ..graph.interpret import main_function
    func, _ = main_function(func)
    ex = _Exporter(_opset(func))

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
        elif isinstance(n, TupleGetItem) and isinstance(ex.names.get(id(n.tuple_value)), list):
            ex.names[id(n)] = ex.names[id(n.tuple_value)][n.index]   # an output of a node
        elif isinstance(n, (Tuple, TupleGetItem, Var)):
            if not isinstance(n, Tuple) or n is not func.body:
                raise UnsupportedModelError(f"to_onnx: cannot export {n!r}; export functions "
                                            "of op calls returning a tensor or a tuple")
        else:
            raise UnsupportedModelError(f"to_onnx: cannot export {n!r} (legalized graphs "
                                        "call loop-level kernels; export before compiling)")
    outs = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    outputs = []
    for o in outs:
        names, types = ex.names[id(o)], o.type
        if isinstance(names, list):     # the outputs of one node
            outputs += [info(name, t) for name, t in zip(names, types.fields)]
        else:
            outputs.append(info(names, types))
    graph = helper.make_graph(ex.nodes, name or func.name, inputs, outputs, ex.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", ex.opset)] + [
        helper.make_opsetid(d, 1) for d in sorted(ex.domains)],
                              producer_name="mlcbook")
    model.ir_version = 8
    checker.check_model(model)
    return model


__all__ = ["to_onnx"]
