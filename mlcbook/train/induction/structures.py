"""The space of starting structures induction chooses from, built as graph IR, and the
trainer the corpus runs them with.

A :class:`Structure` is an MLP family member: ``depth`` hidden layers of ``width`` units,
an activation (relu or tanh), optionally a layer norm after each hidden gemm and residual
adds between hidden layers (depth 0 is a linear model). ``build`` makes its IR; what
induction *sees* of it is the IR's op motifs (:func:`~.features.structure_of`).

    >>> s = Structure(depth=2, width=32, residual=True, norm=True)
    >>> s.name
    'mlp-2x32-relu+res+ln'
    >>> structure_of(s.build(inputs=10, outputs=3, batch=32))["motifs"]
    {'add>gemm': 1, 'gemm>add': 1, 'gemm>layer_norm': 2, 'layer_norm>relu': 2, ...}

:class:`InterpretedTrainer` is an :class:`~mlcbook.train.Trainer` whose step runs in the
graph interpreter: for the corpus's small models and few hundred steps that is cheaper
than compiling native code for every structure and every rewrite, and the training-aware
:class:`~mlcbook.train.rewrite.Runtime` drives it like any trainer.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ...errors import InductionError
from ...graph.expr import Call, Constant, Function, Var
from ...graph.interpret import interpret
from ...ops.types import Attrs, TensorType
from ..optim import Optimizer
from ..step import LABELS, LR, build_step
from ..trainer import Trainer

ACTIVATIONS = ("relu", "tanh")


@dataclass(frozen=True)
class Structure:
    """``depth`` hidden layers of ``width`` units with ``activation``; ``norm``: a layer
    norm after each hidden gemm; ``residual``: hidden layer k > 1 adds its input back."""

    depth: int
    width: int = 32
    activation: str = "relu"
    residual: bool = False
    norm: bool = False

    def __post_init__(self):
        if not isinstance(self.depth, int) or self.depth < 0 or \
                not isinstance(self.width, int) or self.width < 1:
            raise InductionError(f"Structure: depth={self.depth!r} and width={self.width!r} "
                                 "must be integers, depth >= 0 and width >= 1. Instead: e.g. "
                                 "Structure(depth=2, width=32)")
        if self.activation not in ACTIVATIONS:
            raise InductionError(f"Structure: activation={self.activation!r} is not one of "
                                 f"{ACTIVATIONS}. Instead: activation='relu'")

    @property
    def name(self) -> str:
        if self.depth == 0:
            return "linear"
        extra = ("+res" if self.residual else "") + ("+ln" if self.norm else "")
        return f"mlp-{self.depth}x{self.width}-{self.activation}{extra}"

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> "Structure":
        return Structure(**d)

    def build(self, inputs: int, outputs: int, batch: int = 32, seed: int = 0) -> Function:
        """The structure's IR on ``(batch, inputs)`` inputs, He-initialized by ``seed``."""
        rng = np.random.default_rng(seed)
        x = Var("input", TensorType((batch, inputs), "float32"))
        h, n_in = x, inputs
        for k in range(1, self.depth + 1):
            t = _dense(rng, h, n_in, self.width, f"fc{k}")
            if self.norm:
                t = Call("layer_norm", (t, Constant(np.ones(self.width, np.float32),
                                                   f"ln{k}.scale"),
                                        Constant(np.zeros(self.width, np.float32),
                                                 f"ln{k}.bias")),
                         Attrs(axis=-1, epsilon=1e-5, num_outputs=1), f"ln{k}")
            t = Call(self.activation, (t,), Attrs(), f"{self.activation}{k}")
            h = Call("add", (h, t), Attrs(), f"res{k}") if self.residual and k > 1 else t
            n_in = self.width
        return Function((x,), _dense(rng, h, n_in, outputs, f"fc{self.depth + 1}"),
                        self.name.replace("-", "_").replace("+", "_"))


def _dense(rng, h, n_in: int, n_out: int, name: str) -> Call:
    w = Constant((rng.standard_normal((n_out, n_in)) * np.sqrt(2.0 / n_in)).astype(np.float32),
                 f"{name}.weight")
    b = Constant(np.zeros(n_out, np.float32), f"{name}.bias")
    return Call("gemm", (h, w, b), Attrs(trans_b=1), name)


#: the candidate starting structures: a linear model, shallow and deep, narrow and wide,
#: relu and tanh, plain, residual and layer-normalized MLPs
CANDIDATES = (Structure(0), Structure(1, 16), Structure(1, 64), Structure(2, 32),
              Structure(2, 32, "tanh"), Structure(3, 32, residual=True),
              Structure(3, 32, residual=True, norm=True), Structure(2, 64, norm=True))


class InterpretedTrainer(Trainer):
    """A :class:`~mlcbook.train.Trainer` whose step and predictions run in the graph
    interpreter (no native compile; the same step graph, parameters and state).

    >>> t = InterpretedTrainer(model, "cross_entropy", mb.train.Adam(0.01), batches)
    >>> rt = mb.train.rewrite.Runtime(t, policies=[...]); rt.run(200)
    """

    def __init__(self, model: Function, loss: str, optimizer: Optimizer, data=None):
        # the Trainer's own __init__ compiles native code, which is what this class avoids
        self.model_ir, self.loss, self.optimizer, self.data = model, loss, optimizer, data
        self.train_step = build_step(model, loss, optimizer)
        self.params = {n: np.array(model.weights[n].data) for n in self.train_step.params}
        self.state = {}
        for p in self.train_step.params:
            fresh = optimizer.init_state(self.params[p])
            self.state.update({name: fresh[slot]
                               for slot, name in self.train_step.owned_by(p).items()})
        self.buffers = {n: np.array(model.weights[n].data) for n in self.train_step.buffers}
        self.step_count, self._forward = 0, None

    def step(self, x: np.ndarray, y: np.ndarray) -> float:
        """One training step on ``(x, y)``; the loss before it."""
        lr = self.optimizer.schedule(self.step_count)
        feed = {self.train_step.data_inputs[0]: x, LABELS: y,
                LR: np.asarray(lr, np.float32), **self.params, **self.state, **self.buffers}
        outs = interpret(self.train_step.function, **feed)
        groups = [self.params, self.state, self.buffers]
        for (name, target), v in zip([(n, g) for g in groups for n in g], outs[1:]):
            np.copyto(target[name], v)
        self.step_count += 1
        return float(outs[0])

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The model's output on ``x`` (any number of rows; chunks of the batch size)."""
        model, batch = self.model(), self.model_ir.params[0].type.shape[0]
        outs = []
        for i in range(0, len(x), batch):
            chunk = x[i:i + batch]
            pad = np.zeros((batch - len(chunk),) + chunk.shape[1:], chunk.dtype)
            outs.append(np.asarray(interpret(model, np.concatenate([chunk, pad])))[:len(chunk)])
        return np.concatenate(outs)


__all__ = ["ACTIVATIONS", "Structure", "CANDIDATES", "InterpretedTrainer"]
