"""The training step as one graph function: forward, loss, backward and the optimizer's
update, with the parameters and their optimizer state as inputs and their next values as
outputs. Who owns which state is recorded in the function's attributes.

    >>> ts = build_step(model, "cross_entropy", Adam(lr=1e-3))
    >>> ts.function.params        # input, labels, lr, fc1.weight, ..., fc1.weight.m, ...
    >>> ts.state["fc1.weight.m"]  # StateLink(owner='fc1.weight', slot='m')
    >>> ts.function.attrs["state_owners"][0]
    ('fc1.weight.m', 'fc1.weight', 'm')

Which weights are parameters and which are buffers (updated by their own rule, after the
parameters' state) is the model's declaration (:func:`mlcbook.graph.declarations`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import TrainingError
from ..graph.batch import SymbolicBatchModule
from ..graph.expr import Call, Constant, Function, Tuple, Var
from ..graph.interpret import main_function
from ..graph.params import COUNT, declarations, running_update
from ..ops import OpKind
from ..ops import get as get_op
from ..ops.types import Attrs, TensorType
from ..tir.function import IRModule
from .autodiff import backward, lift_weights
from .losses import get_loss
from .optim import Optimizer, state_name
from .step_graph import after_backward, feature_major

#: the name of the labels input and of the learning-rate input of a step function
LABELS, LR = "labels", "lr"


@dataclass(frozen=True)
class StateLink:
    """A state tensor belongs to parameter ``owner``; it is the optimizer's ``slot``."""

    owner: str
    slot: str


@dataclass(frozen=True)
class TrainStep:
    """``function(*data, labels, lr, *params, *state, *buffers) -> (loss, *new params,
    *new state, *new buffers)``."""

    function: Function
    data_inputs: tuple[str, ...]
    params: tuple[str, ...]
    state: dict[str, StateLink]
    buffers: tuple[str, ...] = ()

    def owned_by(self, param: str) -> dict[str, str]:
        """``{slot: state name}`` of the state tensors ``param`` owns."""
        return {link.slot: name for name, link in self.state.items() if link.owner == param}


def _labels_type(loss: str, out: TensorType) -> TensorType:
    if loss == "cross_entropy":
        return TensorType(out.shape[:1], "int64")
    return out


def model_function(model) -> Function:
    """The graph function to train: ``model`` itself, or the main function of the module
    ``mb.from_onnx`` returned."""
    if isinstance(model, SymbolicBatchModule):
        raise TrainingError(
            f"the model has the symbolic batch size {model.batch_dim!r}, and a training step "
            "is compiled for one batch size. Instead: import it with "
            "mb.from_onnx(model, batch_size=n), n the batch size you train with")
    if isinstance(model, IRModule):
        return main_function(model)[0]
    if not isinstance(model, Function):
        raise TrainingError(f"a training step takes a graph Function or the IRModule "
                            f"mb.from_onnx returns, got {type(model).__name__}")
    return model


def build_step(model: Function, loss: str, optimizer: Optimizer) -> TrainStep:
    """The training step of ``model`` (a graph function, or a module with one) under
    ``loss`` (a name from :data:`~mlcbook.train.losses.LOSSES`): its declared parameters
    (:func:`mlcbook.graph.declarations`) are trained, its buffers updated by their rules."""
    model = model_function(model)
    if not isinstance(model.ret_type, TensorType):
        raise TrainingError(f"model {model.name!r} returns {model.ret_type}; a trainable model "
                            "returns one tensor (the logits or the prediction)")
    loss_fn = get_loss(loss)
    declared = declarations(model)
    lifted = lift_weights(model, declared.parameters + declared.buffers)
    lifted = lifted.with_body(feature_major(lifted.body, set(declared.parameters)))
    n_data = len(model.params)
    data = lifted.params[:n_data]
    weights = {p.name: p for p in lifted.params[n_data:]}
    params = [weights[n] for n in weights if n in declared.parameters]
    buffers = [weights[n] for n in weights if n in declared.buffers]
    if not params:
        raise TrainingError(f"model {model.name!r} has no parameters to train (its weights: "
                            f"{len(declared.constants)} constants, {len(buffers)} buffers). "
                            "Instead: unfreeze some, or check mb.graph.declarations(model)")
    labels = Var(LABELS, _labels_type(loss, model.ret_type))
    lr = Var(LR, TensorType((), params[0].dtype))
    value = loss_fn(lifted.body, labels)
    grads = backward(value, params)
    state_vars, new_params, new_state, links = [], [], [], {}
    for p, g in zip(params, grads):
        inits = optimizer.init_state_types(p.type)
        svars = {slot: Var(state_name(p.name, slot), t) for slot, t in inits.items()}
        new_p, new_s = optimizer.update(p, g, svars, lr)
        _check_in_place(p, new_p)
        new_params.append(new_p)
        for slot, v in svars.items():
            _check_in_place(v, new_s[slot])
            state_vars.append(v)
            new_state.append(new_s[slot])
            links[v.name] = StateLink(p.name, slot)
    new_buffers = _buffer_updates(lifted, buffers, declared)
    attrs = Attrs(params=tuple(p.name for p in params),
                  state_owners=tuple((n, ln.owner, ln.slot) for n, ln in links.items()),
                  buffers=tuple(b.name for b in buffers))
    body = after_backward(Tuple([value] + new_params + new_state + new_buffers))
    func = Function(tuple(data) + (labels, lr) + tuple(params) + tuple(state_vars)
                    + tuple(buffers), body, "train_step", attrs)
    return TrainStep(func, tuple(d.name for d in data), tuple(p.name for p in params), links,
                     tuple(b.name for b in buffers))


def _buffer_updates(lifted: Function, buffers: list[Var], declared) -> list:
    """The next value of each buffer by its declared rule, from the forward graph."""
    calls = {c.name: c for c in lifted.calls()}
    out = []
    for b in buffers:
        rule = declared[b.name].update
        if rule and rule[0] == COUNT:
            new = Call("add", (b, Constant(np.ones((), b.dtype))))
        elif rule and len(rule) == 2 and rule[1] in calls:
            new = running_update(calls[rule[1]], rule[0], b)
        else:
            raise TrainingError(f"buffer {b.name!r} has the update rule {rule!r}, which names "
                                "no call of the model or is unknown. Instead: declare it "
                                "with ('count',) or (running_mean|running_var, call name)")
        _check_in_place(b, new)
        out.append(new)
    return out


def _check_in_place(old: Var, new) -> None:
    """The next value must come from an elementwise op of the old value's shape, so that its
    kernel can write over the old value."""
    ok = isinstance(new, Call) and new.type == old.type and \
        get_op(new.op).kind in (OpKind.ELEMWISE, OpKind.BROADCAST)
    if not ok:
        raise TrainingError(
            f"the optimizer's update of {old.name!r} does not end in an elementwise op of its "
            f"type {old.type}, so it cannot be applied in place. Instead: end the update with "
            "an elementwise op (e.g. sub(p, mul(lr, step)))")


__all__ = ["build_step", "TrainStep", "StateLink", "LABELS", "LR"]
