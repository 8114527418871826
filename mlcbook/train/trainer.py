"""A compiled training step and the loop around it: ``compile_step(model, loss, optimizer)``
returns a :class:`Trainer` whose ``step(x, y)`` runs forward, backward and update as native
kernels, updating the parameters and optimizer state in place.

    >>> trainer = compile_step(model, loss="cross_entropy", optimizer=SGD(0.1, momentum=0.9))
    >>> loss = trainer.step(x, y)                  # one step on one batch
    >>> trainer.data = Batches(x_train, y_train, 64); losses = trainer.fit(100)
    >>> trainer.save("ckpt.zip"); same = mb.train.load("ckpt.zip")
"""

from __future__ import annotations

import numpy as np

from ..errors import TrainingError
from ..graph.compile import compile as compile_graph
from ..graph.expr import Constant, Function
from ..graph.functor import ExprMutator
from ..graph.memory.aliases import with_output_aliases
from ..graph.params import Declarations, declarations, declare, eval_form
from ..graph.serialize import function_from_json, function_to_json
from .autodiff import lift_weights
from .checkpoint import read_checkpoint, write_checkpoint
from .data import Batches
from .losses import check_labels
from .optim import Optimizer, optimizer_from_json
from .step import LABELS, LR, TrainStep, build_step, model_function


class _SetWeights(ExprMutator):
    def __init__(self, values: dict[str, np.ndarray]):
        super().__init__()
        self.values = values

    def visit_Constant(self, c: Constant):
        if c.name in self.values:
            return Constant(self.values[c.name].copy(), c.name, c.owner)
        return c


class Trainer:
    """Parameters, optimizer state, buffers and a compiled step. ``params``, ``state`` and
    ``buffers`` are the arrays the kernels update in place (read them; copy before keeping a
    snapshot); ``executable`` is the compiled step (its ``plan`` lists the kernel calls), and
    ``train_step`` the graph it was compiled from. ``freeze`` (weight or call names) keeps
    those parameters constant; ``trainable`` names exactly the weights to train;
    ``declared`` says what each weight is and why."""

    def __init__(self, model: Function, loss: str, optimizer: Optimizer,
                 data: Batches | None = None, freeze=(), trainable=None):
        if not isinstance(optimizer, Optimizer):
            raise TrainingError(f"optimizer must be mb.train.SGD, Adam or AdamW, got "
                                f"{optimizer!r}")
        model = model_function(model)
        if freeze or trainable is not None:
            model = declare(model, freeze=freeze, trainable=trainable)
        self.model_ir, self.loss, self.optimizer, self.data = model, loss, optimizer, data
        self.train_step: TrainStep = build_step(model, loss, optimizer)
        weights = model.weights
        self.params = {n: np.array(weights[n].data) for n in self.train_step.params}
        self.state: dict[str, np.ndarray] = {}
        for p in self.train_step.params:
            fresh = optimizer.init_state(self.params[p])
            for slot, name in self.train_step.owned_by(p).items():
                self.state[name] = fresh[slot]
        self.buffers = {n: np.array(weights[n].data) for n in self.train_step.buffers}
        self.step_count = 0
        names = list(self.params) + list(self.state) + list(self.buffers)
        # outputs 1.. are the next parameters and state: the planner writes each into the
        # array passed for it, and a step returns the loss alone
        step = with_output_aliases(self.train_step.function,
                                   {1 + k: n for k, n in enumerate(names)})
        self.executable = compile_graph(step)
        self._forward = None

    # --- training ------------------------------------------------------------------------
    def step(self, *inputs: np.ndarray) -> float:
        """One training step on a batch: ``step(x, labels)``; returns the loss before it."""
        data = self.train_step.data_inputs
        if len(inputs) != len(data) + 1:
            raise TrainingError(f"trainer.step takes {len(data)} data input(s) "
                                f"({', '.join(data)}) and the labels, got {len(inputs)} arrays")
        feed = dict(zip(data, inputs))
        check_labels(self.loss, inputs[-1], self.model_ir.ret_type.shape[-1])
        feed[LABELS] = inputs[-1]
        lr = self.optimizer.schedule(self.step_count)
        feed[LR] = np.asarray(lr, self.train_step.function.params[len(data) + 1].dtype)
        feed.update(self.params)
        feed.update(self.state)
        feed.update(self.buffers)
        # positional, in the executable's order: arrays of the inputs' exact types run as
        # they are, unchecked one by one (a dict is bound and checked name by name, a part
        # of a small model's step that one thread pays while the other waits)
        loss = self.executable(*(feed[n] for n in self.executable.input_names))
        self.step_count += 1
        return float(loss)

    def fit(self, steps: int) -> list[float]:
        """``steps`` steps on batches from ``self.data``; the losses."""
        if self.data is None:
            raise TrainingError("trainer.fit needs batches: set trainer.data = "
                                "mb.train.Batches(x, y, batch_size) first")
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise TrainingError(f"trainer.fit(steps) takes a whole number of steps (0 or more), "
                                f"got {steps!r}; Instead: e.g. trainer.fit(100)")
        return [self.step(*self.data.next()) for _ in range(steps)]

    # --- using the model -----------------------------------------------------------------
    @property
    def declared(self) -> Declarations:
        """What each weight of the model is (parameter, buffer, constant) and why."""
        return declarations(self.model_ir)

    def model(self) -> Function:
        """The model's graph with the current parameters and buffers as its weights (its
        training form: for ``mb.to_onnx``, or more training)."""
        return _SetWeights({**self.params, **self.buffers}).visit_function(self.model_ir)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The model's output on ``x`` of any number of rows (run in the model's batch size,
        the last chunk padded), in inference form: BatchNorm with the running statistics,
        no dropout."""
        forward = eval_form(self.model_ir)
        # (the inference form has no dropout, so no dropout counter)
        values = {**self.params, **self.buffers}
        weights = {n: values[n] for n in forward.weights if n in values}
        if self._forward is None:
            self._forward = compile_graph(lift_weights(forward, list(weights)))
        batch = self.model_ir.params[0].type.shape[0]
        if np.ndim(x) == 0 or len(x) == 0:
            row = self.model_ir.params[0].type.shape[1:]
            raise TrainingError(f"predict needs at least one row of inputs, got an array of "
                                f"shape {np.shape(x)}; Instead: pass x of shape "
                                f"(rows, {', '.join(map(str, row))})")
        outs = []
        for i in range(0, len(x), batch):
            chunk = x[i:i + batch]
            pad = np.zeros((batch - len(chunk),) + chunk.shape[1:], chunk.dtype)
            outs.append(self._forward(np.concatenate([chunk, pad]), *weights.values())
                        [:len(chunk)])
        return np.concatenate(outs)

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        """The fraction of rows whose largest output is at their label."""
        if np.ndim(y) != 1 or len(y) != len(x):
            raise TrainingError(f"accuracy needs one label per row: x has shape {np.shape(x)}, "
                                f"y {np.shape(y)}; Instead: pass y of shape ({len(x)},)")
        return float((self.predict(x).argmax(axis=1) == y).mean())

    # --- checkpoints ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Copies of everything a continuation needs: parameters, optimizer state, buffers,
        the step number, and the data iterator's position and random state."""
        return {"step": self.step_count,
                "params": {k: v.copy() for k, v in self.params.items()},
                "state": {k: v.copy() for k, v in self.state.items()},
                "buffers": {k: v.copy() for k, v in self.buffers.items()},
                "data": None if self.data is None else self.data.state_dict()}

    def load_state_dict(self, d: dict) -> None:
        """Continue from :meth:`state_dict` (arrays copied into the trainer's arrays; without
        ``buffers`` the trainer keeps its own)."""
        if not isinstance(d, dict) or not {"step", "params", "state"} <= set(d):
            raise TrainingError(f"load_state_dict takes what state_dict() returned (a dict with "
                                f"step, params and state), got {type(d).__name__} "
                                f"{sorted(d) if isinstance(d, dict) else ''}; Instead: "
                                "trainer.load_state_dict(other.state_dict())")
        groups = [("params", self.params), ("state", self.state)]
        if "buffers" in d:
            groups.append(("buffers", self.buffers))
        for group, mine in groups:
            theirs = d[group]
            if set(theirs) != set(mine):
                raise TrainingError(f"load_state_dict: the {group} differ: expected "
                                    f"{sorted(mine)}, got {sorted(theirs)}")
            for k, v in theirs.items():
                if np.shape(v) != mine[k].shape:
                    raise TrainingError(f"load_state_dict: {k!r} has shape {np.shape(v)}, "
                                        f"the trainer's is {mine[k].shape}")
                np.copyto(mine[k], v)
        self.step_count = int(d["step"])
        if d.get("data") is not None:
            if self.data is None:
                raise TrainingError("load_state_dict: the state has a data position but the "
                                    "trainer has no data; set trainer.data first")
            self.data.load_state_dict(d["data"])

    def save(self, path) -> str:
        """Write a checkpoint: the model's IR, the loss, the optimizer (with its schedule),
        parameters, optimizer state, step number, and the data (arrays, position, random
        state). :func:`load` continues from it bit for bit."""
        doc, arrays = function_to_json(self.model_ir)
        arrays = {f"model/{k}": v for k, v in arrays.items()}
        sd = self.state_dict()
        arrays.update({f"param/{k}": v for k, v in sd["params"].items()})
        arrays.update({f"state/{k}": v for k, v in sd["state"].items()})
        arrays.update({f"buffer/{k}": v for k, v in sd["buffers"].items()})
        data = sd["data"]
        if data is not None:
            arrays.update({"data/x": self.data.x, "data/y": self.data.y,
                           "data/order": data.pop("order")})
        return write_checkpoint(path, {"model": doc, "loss": self.loss,
                                       "optimizer": self.optimizer.to_json(),
                                       "step": sd["step"], "data": data}, arrays)

    def __repr__(self) -> str:
        buffers = f"{len(self.buffers)} buffers, " if self.buffers else ""
        return (f"<Trainer {self.model_ir.name}: {len(self.params)} parameters, "
                f"{len(self.state)} state tensors, {buffers}"
                f"{type(self.optimizer).__name__}, step {self.step_count}>")


def compile_step(model, loss: str = "cross_entropy",
                 optimizer: Optimizer | None = None, data: Batches | None = None,
                 freeze=(), trainable=None) -> Trainer:
    """A :class:`Trainer` for ``model`` (a graph function, or the module ``mb.from_onnx``
    returns; its declared parameters are trained, see :func:`mlcbook.graph.declarations`).
    ``freeze=["conv1"]`` keeps a layer's (or a weight's) values as they are;
    ``trainable=[...]`` names exactly the weights to train."""
    if optimizer is None:
        raise TrainingError("compile_step needs an optimizer, e.g. "
                            "optimizer=mb.train.SGD(lr=0.1, momentum=0.9)")
    return Trainer(model, loss, optimizer, data, freeze=freeze, trainable=trainable)


def load(path) -> Trainer:
    """The trainer a checkpoint written by :meth:`Trainer.save` describes, ready to continue."""
    doc, arrays = read_checkpoint(path)
    model = function_from_json(doc["model"], {k[len("model/"):]: v for k, v in arrays.items()
                                              if k.startswith("model/")})
    data = None
    if doc["data"] is not None:
        d = doc["data"]
        data = Batches(arrays["data/x"], arrays["data/y"], d["batch_size"], d["seed"],
                       d["shuffle"])
    trainer = Trainer(model, doc["loss"], optimizer_from_json(doc["optimizer"]), data)
    state = {"step": doc["step"],
             "params": {k[6:]: v for k, v in arrays.items() if k.startswith("param/")},
             "state": {k[6:]: v for k, v in arrays.items() if k.startswith("state/")},
             "buffers": {k[7:]: v for k, v in arrays.items() if k.startswith("buffer/")},
             "data": None if data is None else dict(doc["data"], order=arrays["data/order"])}
    trainer.load_state_dict(state)
    return trainer


__all__ = ["Trainer", "compile_step", "load"]
