"""A corpus of training runs made by the training-aware runtime: for each (problem,
starting structure, seed) the problem's features, the starting structure as IR motifs,
the rewrites the runtime made and when, the training curve, the validation scores.

    >>> rec = train_run(make("moons", 0), Structure(1, 16), steps=300, seed=0)
    >>> rec["initial"]["motifs"], [(r["step"], r["layer"], r["to"]) for r in rec["rewrites"]]
    ({'gemm>relu': 1, 'relu>gemm': 1}, [(79, 'fc1', 32), (118, 'fc1', 64), (144, 'fc1', 128)])
    >>> rec["val"], rec["score"]
    ({'75': 0.8636, '150': 0.8364, '300': 0.8273}, 0.8273)
    >>> corpus = build_corpus(suite(), CANDIDATES, seeds=(0, 1, 2),
    ...                       executor=ProcessPoolExecutor(2))        # a progress bar
    >>> save_corpus(corpus, "runs.json"); corpus = load_corpus("runs.json")

Each run is a :class:`~mlcbook.train.rewrite.Runtime` over an :class:`.InterpretedTrainer`
with one policy, :class:`WidenOnPlateau`: when the mean loss of an epoch stops improving
by 2%, the narrowest hidden layer is widened twofold (Net2WiderNet, its optimizer state
transported), up to ``max_width``. The validation score is taken at a quarter, half and
all of the steps: a run cut short at those points is exactly a shorter run (the policy
only looks back), which the benchmark uses for random search at equal compute.
``python bench/induction.py --ship`` rebuilds the corpus the package ships.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...errors import InductionError
from ...optional import progress
from ..data import Batches
from ..optim import Adam
from ..rewrite.rewrites import widen
from ..rewrite.runtime import Runtime
from ..rewrite.triggers import Plateau
from .features import problem_features, score, structure_of
from .problems import Problem
from .structures import InterpretedTrainer, Structure

#: the corpus the package ships (written by ``python bench/induction.py --ship``)
SHIPPED = Path(__file__).with_name("corpus.json")
FORMAT = "mlcbook.induction.corpus/2"
#: the loss curve is kept as the mean of every this many steps
CURVE_EVERY = 20


@dataclass
class WidenOnPlateau:
    """A runtime policy: when the epoch-mean loss plateaus, widen the narrowest hidden
    gemm by ``factor`` (up to ``max_width``; a residual stream widens as one group)."""

    max_width: int = 128
    factor: int = 2
    plateau: Plateau = field(default_factory=lambda: Plateau(patience=0, threshold=0.02,
                                                            cooldown=1))
    _epoch: int = 0
    _losses: list = field(default_factory=list)

    def step(self, rt, loss: float) -> None:
        if rt.epoch == self._epoch:
            self._losses.append(loss)
            return
        mean, self._epoch, self._losses = float(np.mean(self._losses)), rt.epoch, [loss]
        if not self.plateau.update(mean):
            return
        hidden = hidden_layers(rt.trainer.params)
        if not hidden:
            return
        layer, width = min(hidden, key=lambda lw: lw[1])
        new = min(self.max_width, width * self.factor)
        if new > width:
            rt.apply(lambda m, state: widen(m, layer, new, state=state, noise=0.1,
                                            seed=rt.step_count),
                     event="plateau", epoch_loss=mean)


def hidden_layers(params: dict) -> list[tuple[str, int]]:
    """``(layer, width)`` of each hidden gemm ``fc1, fc2, ...`` (all but the last)."""
    k, out = 1, []
    while f"fc{k + 1}.weight" in params:
        out.append((f"fc{k}", int(params[f"fc{k}.weight"].shape[0])))
        k += 1
    return out


def train_run(problem: Problem, structure: Structure, steps: int = 240, seed: int = 0,
              batch: int = 32, lr: float = 0.01, grow: bool = True,
              features: dict | None = None, max_width: int = 128) -> dict:
    """Train ``structure`` on ``problem`` for ``steps`` steps under the runtime (widening
    on plateaus if ``grow``) and return the run's record."""
    if not isinstance(structure, Structure):
        raise InductionError(f"train_run: structure must be a Structure, got {structure!r}. "
                             "Instead: e.g. Structure(depth=2, width=32)")
    if len(problem.x_train) < batch:
        raise InductionError(f"train_run: problem {problem.name!r} has {len(problem.x_train)} "
                             f"training rows, fewer than batch={batch}. Instead: a smaller "
                             "batch")
    model = structure.build(problem.x_train.shape[1], problem.outputs, batch, seed)
    trainer = InterpretedTrainer(model, problem.loss, Adam(lr=lr),
                                 Batches(problem.x_train, problem.y_train, batch, seed=seed))
    rt = Runtime(trainer, policies=[WidenOnPlateau(max_width)] if grow else [])
    losses, val = [], {}
    for at in sorted({max(1, steps // 4), max(1, steps // 2), steps}):
        losses += rt.run(at - len(losses))
        v = score(problem, rt.trainer.predict(problem.x_val), problem.y_val)
        val[str(at)] = round(v if np.isfinite(v) else -1.0, 4)
    curve = [round(float(np.mean(losses[i:i + CURVE_EVERY])), 4)
             for i in range(0, len(losses), CURVE_EVERY)]
    final = structure_of(rt.current_model())
    return {"problem": problem.name, "family": problem.family, "kind": problem.kind,
            "features": features or problem_features(problem), "seed": seed, "steps": steps,
            "structure": structure.to_json(), "name": structure.name,
            "initial": _jsonable(structure_of(model)),
            "rewrites": [{"step": r["step"], "action": r["action"], "layer": r["layer"],
                          "to": r["to"]} for r in rt.log if r["event"] == "plateau"],
            "final": {"widths": list(final["widths"]), "params": final["params"]},
            "curve": curve, "val": val, "score": val[str(steps)]}


def _jsonable(structure: dict) -> dict:
    return dict(structure, widths=list(structure["widths"]))


def _job(args) -> dict:
    problem, structure, seed, features, kw = args
    return train_run(problem, structure, seed=seed, features=features, **kw)


def build_corpus(problems, structures, steps: int = 240, seeds=(0,), executor=None,
                 show_progress: bool = True, **kw) -> list[dict]:
    """One run per problem, starting structure and seed, in that order; over
    ``executor`` (any ``concurrent.futures.Executor``: a ProcessPoolExecutor, or Dask's
    ``client.get_executor()`` for more machines) if given, with a progress bar."""
    problems, structures = list(problems), list(structures)
    if not problems or not structures:
        raise InductionError("build_corpus needs at least one problem and one structure. "
                             "Instead: e.g. build_corpus(suite(), CANDIDATES)")
    jobs = []
    for p in problems:
        feats = problem_features(p)
        jobs += [(p, s, seed, feats, dict(kw, steps=steps)) for s in structures
                 for seed in seeds]
    results = map(_job, jobs) if executor is None else executor.map(_job, jobs)
    if show_progress:
        results = progress(results, total=len(jobs), feature="building the induction corpus",
                           desc="corpus runs")
    return list(results)


def save_corpus(corpus: list[dict], path) -> str:
    """Write the corpus as compact JSON, each problem's features stored once."""
    problems = {r["problem"]: r["features"] for r in corpus}
    runs = [{k: v for k, v in r.items() if k != "features"} for r in corpus]
    Path(path).write_text(json.dumps({"format": FORMAT, "problems": problems, "runs": runs},
                                     separators=(",", ":")))
    return str(path)


def load_corpus(path=SHIPPED) -> list[dict]:
    """The runs :func:`save_corpus` wrote (default: the corpus the package ships)."""
    if not Path(path).exists():
        raise InductionError(f"no corpus at {path}. Instead: build one with build_corpus, or "
                             "ship one with `python bench/induction.py --ship`")
    doc = json.loads(Path(path).read_text())
    if doc.get("format") != FORMAT:
        raise InductionError(f"{path}: not a corpus written by save_corpus (format "
                             f"{doc.get('format')!r}, expected {FORMAT!r}). Instead: build "
                             "one with build_corpus")
    return [dict(r, features=doc["problems"][r["problem"]]) for r in doc["runs"]]


__all__ = ["SHIPPED", "FORMAT", "WidenOnPlateau", "hidden_layers", "train_run",
           "build_corpus", "save_corpus", "load_corpus"]
