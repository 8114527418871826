"""A corpus of training runs: for each (problem, starting structure) the problem's
features, the structure the run started from and ended with (what the rewrite runtime
grew on plateaus and pruned as dead), and the outcome.

    >>> rec = train_run(problem, (16,), steps=120, seed=0)
    >>> rec["final"]["widths"], rec["grown"], rec["pruned"], rec["score"]
    ((32,), 1, 3, 0.91)
    >>> corpus = build_corpus(problems, [(8,), (32,), (16, 16)], steps=120)
    >>> save_corpus(corpus, "runs.json"); corpus = load_corpus("runs.json")

A run executes mb.train's step function (forward, backward, Adam) with the graph
interpreter: for the small models and few hundred steps of a corpus this is faster than
compiling a native step for every structure (about 4 s each). The rewrites are the ones
of :mod:`mlcbook.train.rewrite`: on a plateau of the epoch loss the narrowest hidden
layer is widened twofold (Net2WiderNet, optimizer state transported); at the end the
units a probe batch never activates are pruned.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ...errors import InductionError
from ...graph.interpret import interpret
from ..data import Batches
from ..models import mlp
from ..optim import Adam
from ..rewrite.observers import unit_stats
from ..rewrite.rewrites import prune, widen
from ..rewrite.transport import weight_arrays, with_weights
from ..rewrite.triggers import Plateau
from ..step import build_step
from .features import problem_features, score, structure_of
from .problems import Problem

#: the widest a run may grow a hidden layer
MAX_WIDTH = 64
#: the corpus the package ships (written by ``python bench/induction.py --ship``)
SHIPPED = Path(__file__).with_name("corpus.json")


class _Run:
    """One interpreted training run of an MLP whose structure may change."""

    def __init__(self, problem: Problem, widths, batch: int, lr: float, seed: int):
        self.problem, self.batch = problem, batch
        self.optimizer = Adam(lr=lr)
        self.structure = mlp((problem.x_train.shape[1], *widths, problem.outputs),
                             batch=batch, seed=seed)
        self.weights = weight_arrays(self.structure)
        self.state = {}
        for k, c in self.structure.weights.items():
            for slot, v in self.optimizer.init_state(np.array(c.data)).items():
                self.state[f"{k}.{slot}"] = v
        self.lr = np.float32(lr)
        self._compile()

    @property
    def model(self):
        """The model's IR with the current weights."""
        return with_weights(self.structure, self.weights)

    def _compile(self):
        self.step_fn = build_step(self.structure, self.problem.loss, self.optimizer)
        n = len(self.step_fn.params)
        self.state_names = [v.name for v in self.step_fn.function.params[3 + n:]]

    def step(self, x, y) -> float:
        feed = {"input": x, "labels": y, "lr": self.lr}
        feed.update(self.weights)
        feed.update(self.state)
        outs = interpret(self.step_fn.function, **feed)
        n = len(self.step_fn.params)
        self.weights = dict(zip(self.step_fn.params, outs[1:1 + n]))
        self.state = dict(zip(self.state_names, outs[1 + n:]))
        return float(outs[0])

    def rewrite(self, r) -> None:
        self.structure, self.state = r.model, r.state
        self.weights = weight_arrays(r.model)
        self._compile()

    def hidden(self) -> list[tuple[str, int]]:
        """(layer, width) of each hidden gemm."""
        w, k, out = self.weights, 1, []
        while f"fc{k + 1}.weight" in w:
            out.append((f"fc{k}", w[f"fc{k}.weight"].shape[0]))
            k += 1
        return out

    def evaluate(self, x, y) -> float:
        """The validation score, the model run in chunks of its batch size."""
        preds, model = [], self.model
        for i in range(0, len(x), self.batch):
            chunk = x[i:i + self.batch]
            pad = np.zeros((self.batch - len(chunk),) + chunk.shape[1:], chunk.dtype)
            preds.append(np.asarray(interpret(model, np.concatenate([chunk, pad])))
                         [:len(chunk)])
        return score(self.problem, np.concatenate(preds), y)


def train_run(problem: Problem, widths, steps: int = 120, seed: int = 0, batch: int = 32,
              lr: float = 0.01, grow: bool = True, features: dict | None = None) -> dict:
    """Train an MLP with hidden ``widths`` on ``problem`` for ``steps`` steps (growing on
    plateaus if ``grow``) and return the run's record."""
    widths = tuple(int(w) for w in widths)
    if not widths or min(widths) < 1:
        raise InductionError(f"train_run: widths={widths} must list at least one hidden "
                             "layer width >= 1. Instead: e.g. widths=(16,)")
    if len(problem.x_train) < batch:
        raise InductionError(f"train_run: problem {problem.name!r} has {len(problem.x_train)} "
                             f"training rows, fewer than batch={batch}. Instead: a smaller "
                             "batch")
    run = _Run(problem, widths, batch, lr, seed)
    data = Batches(problem.x_train, problem.y_train, batch, seed=seed)
    plateau = Plateau(patience=0, threshold=0.05, cooldown=1)
    epoch, epoch_losses, grown, losses = 0, [], [], []
    for _ in range(steps):
        x, y = data.next()
        if data.epoch != epoch:
            epoch, mean = data.epoch, float(np.mean(epoch_losses))
            epoch_losses = []
            if grow and plateau.update(mean):
                layer, width = min(run.hidden(), key=lambda lw: lw[1])
                if width < MAX_WIDTH:
                    to = min(MAX_WIDTH, 2 * width)
                    run.rewrite(widen(run.model, layer, to, state=run.state, noise=0.1,
                                      seed=seed))
                    grown.append({"step": len(losses), "layer": layer, "to": to})
        loss = run.step(x, y)
        losses.append(loss)
        epoch_losses.append(loss)
    pruned = 0
    probe = problem.x_train[:batch]
    for k, (layer, width) in enumerate(run.hidden(), 1):
        dead = unit_stats(run.model, probe)[f"relu{k}"]["dead"]
        if dead and len(dead) < width:
            run.rewrite(prune(run.model, layer, state=run.state, remove=dead))
            pruned += len(dead)
    val = run.evaluate(problem.x_val, problem.y_val)
    return {"problem": problem.name, "kind": problem.kind,
            "features": features or problem_features(problem), "seed": seed, "steps": steps,
            "initial": list(widths), "final": _jsonable(structure_of(run.model)),
            "grown": len(grown), "growth": grown, "pruned": pruned,
            "loss_start": losses[0], "loss_end": float(np.mean(losses[-10:])),
            "score": round(val if np.isfinite(val) else -1.0, 4)}


def _jsonable(structure: dict) -> dict:
    return dict(structure, widths=list(structure["widths"]))


def build_corpus(problems, structures, steps: int = 120, seeds=(0,), **kw) -> list[dict]:
    """One run per problem, starting structure and seed (problem features computed once)."""
    if not problems or not structures:
        raise InductionError("build_corpus needs at least one problem and one structure")
    out = []
    for p in problems:
        feats = problem_features(p)
        for widths in structures:
            for seed in seeds:
                out.append(train_run(p, widths, steps, seed, features=feats, **kw))
    return out


def save_corpus(corpus: list[dict], path) -> str:
    """Write the corpus as JSON (one record per run)."""
    Path(path).write_text(json.dumps({"format": "mlcbook.induction.corpus/1", "runs": corpus},
                                     indent=1))
    return str(path)


def load_corpus(path=SHIPPED) -> list[dict]:
    """The runs :func:`save_corpus` wrote (default: the corpus the package ships)."""
    if not Path(path).exists():
        raise InductionError(f"no corpus at {path}. Instead: build one with build_corpus, or "
                             "ship one with `python bench/induction.py --ship`")
    doc = json.loads(Path(path).read_text())
    if doc.get("format") != "mlcbook.induction.corpus/1":
        raise InductionError(f"{path}: not a corpus written by save_corpus (format "
                             f"{doc.get('format')!r}). Instead: build one with build_corpus")
    return doc["runs"]


__all__ = ["MAX_WIDTH", "SHIPPED", "train_run", "build_corpus", "save_corpus", "load_corpus"]
