"""Checkers for chapter 7, *Automatic optimization*: a feature, a budgeted search, a rule.

* ``07.vector_share`` — a feature: the share of a program's stores, weighted by how often each
  runs, that run inside a vectorized loop; judged against this module's own count on
  programs scheduled in several ways (a weighted count, not a count of statements);
* ``07.budget_search`` — a search within a budget: the function gets a space whose points are
  counted and must return the point the analytic model ranks best among those it drew,
  drawing ``budget`` of them under distinct seeds, rejected draws included (the space
  rejects some seeds), and asking the model about each point;
* ``07.row_rule`` — a search rule for row reductions (sums along the last axis): every point
  of the space it makes must build and compute the sums, the rule must make decisions
  (named after the block): the tile of the row loop, and whether its outer tile (never an
  inner loop) runs in parallel.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import MLCError
from ..tir.function import PrimFunc
from ..tir.functor import Visitor
from ..tir.stmt import BufferStore, For
from .compare import Fail, NotImplementedAnswer, call, randn, trial
from .registry import exercise


# --- the programs -------------------------------------------------------------------------------
def add_then_row_sum(n: int, m: int) -> PrimFunc:
    """``B = A + 1`` (block ``"B"``) then ``S[i] = sum_j B[i, j]`` (block ``"S"``)."""
    from .. import te
    A = te.placeholder((n, m), "float32", name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] + 1.0, name="B")
    j = te.reduce_axis(m, name="j")
    S = te.compute((n,), lambda i: te.sum(B[i, j], axis=j), name="S")
    return te.create_prim_func([A, S])


def row_sum(n: int, m: int) -> PrimFunc:
    """``S[i] = sum_j A[i, j]``: block ``"S"``, loops ``i`` (spatial), ``j`` (reduce)."""
    from .. import te
    A = te.placeholder((n, m), "float32", name="A")
    j = te.reduce_axis(m, name="j")
    S = te.compute((n,), lambda i: te.sum(A[i, j], axis=j), name="S")
    return te.create_prim_func([A, S])


def small_matmul(n: int) -> PrimFunc:
    from .. import te
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis(n, name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


# --- 07.vector_share ----------------------------------------------------------------------------
def _vector_share(func: PrimFunc) -> float:
    from ..tir.transform import lower
    runs = {"vector": 0, "all": 0}

    class Count(Visitor):
        def __init__(self):
            self.loops: list[For] = []

        def visit_For(self, node: For) -> None:
            self.loops.append(node)
            self.generic_visit(node)
            self.loops.pop()

        def visit_BufferStore(self, node: BufferStore) -> None:
            n = math.prod(int(lp.extent.value) for lp in self.loops)
            runs["all"] += n
            if any(lp.kind == "vectorized" for lp in self.loops):
                runs["vector"] += n

    for f in lower(func).functions.values():
        if isinstance(f, PrimFunc):
            Count().visit(f.body)
    return runs["vector"] / runs["all"] if runs["all"] else 0.0


def _programs(rng):
    from ..graph.kernels.default_schedule import default_schedule
    from ..schedule import Schedule
    n, m = int(rng.integers(3, 7)), 8 * int(rng.integers(2, 5))
    f = add_then_row_sum(n, m)
    sch = Schedule(f)
    _, j = sch.get_loops(sch.get_block("B"))
    sch.vectorize(j)
    mixed = sch.func
    # parallel and unrolled loops, none vectorized: a share of 0, whatever else the loops do
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("B"))
    sch.parallel(i)
    sch.unroll(j)
    threaded = sch.func
    return [("add then row sum, unscheduled", f),
            ("add then row sum, B's inner loop vectorized", mixed),
            ("add then row sum, B's loops parallel and unrolled (none vectorized)", threaded),
            (f"matmul {m}, default schedule", default_schedule(small_matmul(m)))]


@exercise("07.vector_share", points=2, answer="vector_share",
          title="A feature: the share of vector work")
def _check_vector_share(answer, rng):
    for what, func in _programs(rng):
        with trial(what):
            got = call(answer, "vector_share", func)
            want = _vector_share(func)
            if not isinstance(got, (int, float, np.floating)) or isinstance(got, bool):
                raise Fail(f"vector_share should return a number, got {type(got).__name__}",
                           about_inputs=False)
            if abs(float(got) - want) > 1e-6:
                raise Fail(f"vector_share returned {float(got):.4f}; the share is {want:.4f}",
                           "weight every store by how many times it runs (the product of the "
                           "extents of the loops around it), and count it as vector work when "
                           "any loop around it is vectorized")
    return "matches the weighted share of vector work on every program"


# --- 07.budget_search ---------------------------------------------------------------------------
class CountingSpace:
    """A space that counts every draw (a rejected one too) and remembers the points it made
    and the seeds it was asked for (what the check reads). It rejects the seeds ``s`` with
    ``(s + salt) % 3 == 0``, as a real space rejects some points, so any run of three
    consecutive seeds meets a rejection."""

    def __init__(self, space, salt: int = 0):
        self._space = space
        self.salt = salt
        self.made: dict = {}
        self.draws = 0
        self.seeds: list[int] = []

    def _note(self, p):
        self.made[p.key] = p
        return p

    def sample(self, seed: int):
        from ..errors import ScheduleError
        self.draws += 1
        self.seeds.append(seed)
        if (int(seed) + self.salt) % 3 == 0:
            raise ScheduleError(f"the space rejects point {seed} (the check rejects some points, "
                             "as a real space does)")
        return self._note(self._space.sample(seed))

    def point(self, decisions: dict, **kw):
        self.draws += 1
        return self._note(self._space.point(decisions, **kw))

    def mutate(self, p, rng):
        self.draws += 1
        return self._note(self._space.mutate(p, rng))


class CountingModel:
    """A cost model that counts the rows it is asked to score."""

    def __init__(self, model):
        self._model = model
        self.rows = 0

    def predict(self, x):
        self.rows += len(x)
        return self._model.predict(x)


def _check_draws(space: CountingSpace, budget: int) -> None:
    if space.draws > budget:
        raise Fail(f"budget_search drew {space.draws} points; the budget is {budget}",
                   "every draw counts, a rejected one too: draw at most `budget` times")
    repeated = sorted({s for s in space.seeds if space.seeds.count(s) > 1})
    if repeated:
        raise Fail(f"budget_search sampled seed {repeated[0]} more than once: the same seed "
                   "gives the same point, so the repeats waste the budget",
                   "draw a different seed each time (seed = 0, 1, 2, ...)")
    if space.draws < budget:
        raise Fail(f"budget_search drew only {space.draws} of its {budget} points",
                   "use the whole budget: more candidates give the model more to choose from")


@exercise("07.budget_search", points=2, answer="budget_search",
          title="Search within a budget, guided by a model")
def _check_budget_search(answer, rng):
    from ..tune.cost_model import AnalyticModel
    from ..tune.features import features
    from ..tune.space import Space
    for n, budget in ((32, 6), (48, int(rng.integers(5, 9)))):
        with trial(f"a {n} x {n} matmul's space, budget {budget}"):
            space = CountingSpace(Space(small_matmul(n)), salt=int(rng.integers(3)))
            model = CountingModel(AnalyticModel())
            best = call(answer, "budget_search", space, budget, model)
            _check_draws(space, budget)
            key = getattr(best, "key", None)
            if key not in space.made:
                raise Fail("budget_search should return one of the points it drew (a Point), "
                           f"got {type(best).__name__}")
            points = list(space.made.values())
            if model.rows < len(points):
                raise Fail(f"budget_search asked the model about {model.rows} of the "
                           f"{len(points)} points it drew",
                           "score every point drawn with model.predict(features)")
            scores = model._model.predict(np.array([features(p.func) for p in points]))
            top = float(np.max(scores))
            mine = float(scores[[p.key for p in points].index(key)])
            if mine < top - 1e-9:
                raise Fail(f"the point returned scores {mine:.3f} with the model; another point "
                           f"drawn scores {top:.3f}",
                           "return the point with the highest model.predict score (higher is "
                           "faster)")
    return "uses its budget of distinct draws, rejected ones counted, and returns the best-ranked"


# --- 07.row_rule --------------------------------------------------------------------------------
def _loops(func: PrimFunc, block: str) -> tuple[list[tuple[int, str, str]], tuple[str, ...]]:
    """``(depth, kind, extent)`` of every loop of ``func``, outermost first, and the extents
    of the loops that ``block``'s spatial axis is bound to (how the rule tiled that axis)."""
    from ..tir.analysis import free_vars
    from ..tir.stmt import BlockRealize
    loops: list[tuple[int, str, str]] = []
    spatial: list[tuple[str, ...]] = []

    class Walk(Visitor):
        def __init__(self):
            self.around: list[For] = []

        def visit_For(self, node: For) -> None:
            loops.append((len(self.around), node.kind, str(node.extent)))
            self.around.append(node)
            self.generic_visit(node)
            self.around.pop()

        def visit_BlockRealize(self, node: BlockRealize) -> None:
            if node.block.name == block:
                bound = {id(v) for value, iv in zip(node.iter_values, node.block.iter_vars)
                         if iv.kind == "spatial" for v in free_vars(value)}
                spatial.append(tuple(str(lp.extent) for lp in self.around
                                     if id(lp.loop_var) in bound))
            self.generic_visit(node)

    Walk().visit(func.body)
    return loops, spatial[0] if spatial else ()


def _sample_rule_point(space, seed: int):
    try:
        return space.sample(seed)
    except NotImplementedError:
        raise NotImplementedAnswer("the rule raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except MLCError as err:
        raise Fail(f"point {seed} of the space was rejected: {type(err).__name__}: {err}",
                   "a rule may offer only choices the schedule always accepts: the reduce "
                   "loop j may not run in parallel") from None
    except Exception as err:  # noqa: BLE001 - the student's rule raised
        raise Fail(f"the rule raised {type(err).__name__}: {err}") from None


@exercise("07.row_rule", points=3, answer="row_rule",
          title="A search rule for row reductions")
def _check_row_rule(answer, rng):
    from ..runtime import build
    from ..tune.space import Space
    if not callable(answer):
        raise Fail(f"expected your rule (a function), got {type(answer).__name__}",
                   about_inputs=False)
    n, m = 8 * int(rng.integers(8, 16)), 8 * int(rng.integers(4, 12))
    func = row_sum(n, m)
    asked = []

    def rule(knobs, name, rules):
        asked.append(name)
        return answer(knobs, name, rules)

    space = Space(func, rules={"row_reduction": rule})
    a = randn(rng, (n, m))
    want = a.astype(np.float64).sum(axis=1)
    tilings, parallel, serial = set(), 0, 0
    points = 16
    with trial(f"row sums of a {n} x {m} matrix"):
        for seed in range(points):
            p = _sample_rule_point(space, seed)
            if not asked:
                # the library classified the row sum otherwise: a checker bug, not the answer's
                raise RuntimeError("the space never asked the row_reduction rule about block S")
            if not p.decisions or not all(k.startswith("S.") for k in p.decisions):
                raise Fail(f"the rule made the decisions {sorted(p.decisions)}; it should make "
                           "at least one, named after the block (knobs.choice(f\"{name}....\"))")
            got = build(p.func)(a)
            if not np.allclose(got, want, rtol=1e-4, atol=1e-3):
                raise Fail(f"point {seed} computes wrong sums (first row: {got[0]:.4f}, "
                           f"expected {want[0]:.4f})")
            loops, rows = _loops(p.func, "S")
            depths = [d for d, kind, _ in loops if kind == "parallel"]
            if any(d > 0 for d in depths):
                raise Fail(f"point {seed} runs an inner loop in parallel",
                           "parallelize the outer tile of i: each thread then takes a block "
                           "of whole rows, and threads start once, not once per outer step")
            parallel += bool(depths)
            serial += not depths
            tilings.add(rows)
    if not parallel:
        raise Fail(f"none of {points} points runs in parallel",
                   "let a decision parallelize the outer tile of i")
    if not serial:
        raise Fail(f"all {points} points run in parallel: the rule never lets the search "
                   "try the serial program", "make parallel a decision: "
                   "if knobs.choice(f\"{name}.parallel\", [False, True]): ...")
    if len(tilings) < 2:
        raise Fail(f"all {points} points tile the spatial loop i the same way ("
                   f"{' x '.join(next(iter(tilings)))}): the split of i is fixed, or another "
                   "loop was split instead",
                   "let a decision choose the tile: sch.split(i, knobs.tile(f\"{name}.rows\", "
                   "i, 2, 16))")
    return (f"several tilings among {points} legal points, the outer tile parallel in some "
            "and serial in others")
