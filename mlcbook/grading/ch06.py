"""Checkers for chapter 6, *Graph optimization*: fusion rules, BatchNorm folding, lifetimes.

Each exercise is judged on freshly drawn graphs, weights and sizes against an independent
reference, and the fusion rule also against the library's :func:`mlcbook.graph.fuse_ops`.
Five helpers are public because the notebooks and tests use them:

* :func:`fuse_by_rule` — the fusion driver of the chapter (post-dominators, groups, two
  phases) with the decision *whether a group joins its post-dominator* left to a function
  the student writes;
* :func:`post_dominators` — each call's immediate post-dominator, by name;
* :func:`question_graphs` — small graphs that ask every kind of question of the rule;
* :func:`random_graph` — a small random graph of elementwise, broadcast, injective,
  reduction and matmul calls, the kind the fusion exercise is graded on;
* :func:`random_steps` — a small random run plan, the kind the lifetimes exercise is graded on.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ops.registry import OpKind
from .compare import Fail, NotImplementedAnswer, call, expect_array, randn, scaled_atol, trial
from .registry import exercise

Rule = Callable[[OpKind, list, OpKind], bool]


# --- 06.fusion_rule ------------------------------------------------------------------------------
def _calls(func):
    from ..graph import Call, post_order
    return [n for n in post_order(func.body) if isinstance(n, Call)]


def post_dominators(func) -> dict[str, str | None]:
    """For every op call of ``func`` (by name): the first call that every path from it to the
    function's result passes through, or None when there is none (the result itself, or
    a value the function also returns).

    Computed from post-dominator *sets* (each call's set is itself plus the intersection of
    its consumers' sets), a different method from the library's, so the two check each other.
    """
    from ..graph import Call, children, post_order
    order = _calls(func)
    index = {id(n): k for k, n in enumerate(order)}
    consumers: dict[int, list] = {id(n): [] for n in order}
    escapes = {id(func.body)}
    for n in post_order(func.body):
        for c in children(n):
            if id(c) in consumers:
                (consumers[id(c)].append(n) if isinstance(n, Call) else escapes.add(id(c)))
    pdom: dict[int, set[int]] = {}
    result: dict[str, str | None] = {}
    for n in reversed(order):
        cons = consumers[id(n)]
        common = set() if id(n) in escapes or not cons else set.intersection(
            *(pdom[id(c)] for c in cons))
        pdom[id(n)] = common | {id(n)}
        first = min(common, key=lambda k: index[k], default=None)
        result[n.name] = None if first is None else order[index[first]].name
    return result


def _paths_to(consumers, n, p) -> list:
    """Every call on a path from ``n`` to its post-dominator ``p``, ``p`` first."""
    seen, stack, out = {id(p)}, [n], [p]
    while stack:
        for c in consumers[id(stack.pop())]:
            if id(c) not in seen:
                seen.add(id(c))
                out.append(c)
                stack.append(c)
    return out


def fuse_by_rule(func, joins: Rule, on_decision=None) -> list[list[str]]:
    """The groups (lists of call names, in evaluation order) that fusing ``func`` gives when
    ``joins(group_kind, kinds_between, post_dominator_kind)`` decides whether a group joins
    its post-dominator's group.

    The driver is the chapter's: calls are visited in evaluation order, twice (first every
    group that is not injective, then the injective ones); a call that is the output of its
    group asks ``joins`` about its post-dominator; ``kinds_between`` are the kinds of the
    groups of the calls on the paths in between, and a merged group takes the largest kind.
    Reshapes (views of memory) never fuse. ``on_decision(call, args, answer)`` sees each
    question and answer.
    """
    from ..graph import Call, children, post_order
    from ..ops import get as get_op, view_ops
    views = view_ops()
    order = _calls(func)
    by_name = {n.name: n for n in order}
    consumers: dict[int, list] = {id(n): [] for n in order}
    for n in post_order(func.body):
        for c in children(n):
            if id(c) in consumers and isinstance(n, Call):
                consumers[id(c)].append(n)
    ipdom = post_dominators(func)
    parent = {id(n): id(n) for n in order}
    kind = {id(n): get_op(n.op).kind for n in order}

    def find(k):
        while parent[k] != k:
            k = parent[k]
        return k

    for phase in (0, 1):
        for n in order:
            if find(id(n)) != id(n) or ipdom[n.name] is None:
                continue
            gkind = kind[id(n)]
            if (gkind == OpKind.INJECTIVE) != (phase == 1):
                continue
            p = by_name[ipdom[n.name]]
            path = _paths_to(consumers, n, p)
            if any(c.op in views for c in [n] + path):
                continue
            args = (gkind, [kind[find(id(c))] for c in path[1:]], kind[find(id(p))])
            answer = joins(*args)
            if on_decision is not None:
                on_decision(n, args, answer)
            if answer:
                root = find(id(p))
                merged = max([gkind] + [kind[find(id(c))] for c in path])
                for c in [n] + path:
                    parent[find(id(c))] = root
                kind[root] = merged
    groups: dict[int, list[str]] = {}
    for n in order:
        groups.setdefault(find(id(n)), []).append(n.name)
    return list(groups.values())


def _reference_joins(group: OpKind, between: list, pdom: OpKind) -> bool:
    if group in (OpKind.OUT_ELEMWISE_FUSABLE, OpKind.REDUCTION):
        return all(k <= OpKind.BROADCAST for k in list(between) + [pdom])
    if group <= OpKind.BROADCAST:
        return pdom <= OpKind.REDUCTION and all(k <= OpKind.BROADCAST for k in between)
    if group == OpKind.INJECTIVE:
        return all(k <= OpKind.INJECTIVE for k in list(between) + [pdom])
    return False


def random_graph(rng: np.random.Generator, calls: int = 8, n: int = 6):
    """A graph Function on ``x`` of shape (n, n) with about ``calls`` op calls drawn from
    relu/exp (elementwise), add/mul (broadcast), transpose (injective), a row sum subtracted
    from a value (reduction), and matmul by a constant (out-elementwise-fusable); values are
    used once or several times, so diamonds appear."""
    from ..graph import Constant, Function, TensorType, Var, op
    x = Var("x", TensorType((n, n)))
    values = [x]
    made = 0

    def pick():
        # recent values more often, so chains form, but older ones too, so diamonds do
        k = len(values) - 1 - min(int(rng.geometric(0.5)) - 1, len(values) - 1)
        return values[k]

    while made < calls:
        name = f"v{made}"
        r = rng.random()
        a = pick()
        if r < 0.3:
            v = (op.relu if rng.random() < 0.5 else op.exp)(a, name=name)
        elif r < 0.55:
            v = (op.add if rng.random() < 0.5 else op.mul)(a, pick(), name=name)
        elif r < 0.68:
            v = op.transpose(a, perm=(1, 0), name=name)
        elif r < 0.8:
            s = op.sum(a, axes=(1,), keepdims=True, name=f"{name}_sum")
            made += 1
            name = f"v{made}"
            v = op.sub(pick(), s, name=name)
        else:
            w = Constant((rng.standard_normal((n, n)) / n).astype(np.float32), f"w{made}")
            v = op.matmul(a, w, name=name)
        values.append(v)
        made += 1
    unused = [v for v in values[1:-1] if not any(v is a for u in values[1:] for a in u.args)]
    out = values[-1]
    for k, v in enumerate(unused):  # every value reaches the result
        out = op.add(out, v, name=f"join{k}")
    return Function([x], out)


def question_graphs(n: int = 6) -> list:
    """Small graphs, one per question the rule must answer, whatever the random graphs ask:
    elementwise into a reduction, into a matmul, through a broadcast; a reduction's and a
    matmul's epilogue; a matmul after a matmul; a transpose after a matmul and after a sum;
    transpose into a sum and into an add; exp into an opaque scatter and relu after it. (Random
    graphs ask some of these only by luck.)"""
    from ..graph import Constant, Function, TensorType, Var, op
    x = Var("x", TensorType((n, n)))
    w = Constant(np.eye(n, dtype=np.float32), "w")
    index = Constant(np.zeros((1, n), dtype=np.int64), "index")
    ones = Constant(np.ones((1, n), dtype=np.float32), "ones")

    def row_sum(v, name):
        return op.sub(x, op.sum(v, axes=(1,), keepdims=True, name=name), name=f"{name}_sub")

    return [
        Function([x], row_sum(op.exp(x, name="e"), "s")),                       # ELEMWISE -> sum
        Function([x], row_sum(op.add(op.relu(x, name="r"), x, name="a"), "s")),  # via BROADCAST
        Function([x], op.matmul(op.relu(x, name="r"), w, name="m")),             # ELEMWISE -> matmul
        Function([x], op.exp(op.matmul(x, w, name="m"), name="e")),              # matmul epilogue
        Function([x], op.matmul(op.matmul(x, w, name="m1"), w, name="m2")),      # matmul -> matmul
        Function([x], op.relu(op.sum(x, axes=(1,), keepdims=True, name="s"), name="r")),
        # a matmul's and a reduction's result transposed: INJECTIVE, not an epilogue
        Function([x], op.transpose(op.matmul(x, w, name="m"), perm=(1, 0), name="t")),
        Function([x], op.transpose(op.sum(x, axes=(1,), keepdims=True, name="s"), perm=(1, 0),
                                   name="t")),
        Function([x], row_sum(op.transpose(x, perm=(1, 0), name="t"), "s")),    # INJECTIVE -> sum
        Function([x], op.add(op.transpose(op.exp(x, name="e"), perm=(1, 0), name="t"), x,
                             name="a")),                                         # -> INJECTIVE
        # ELEMWISE -> OPAQUE and an OPAQUE op's would-be epilogue: opaque fuses with nothing
        Function([x], op.relu(op.scatter_elements(op.exp(x, name="e"), index, ones, axis=0,
                                                  name="o"), name="r")),
    ]


_WHY = {
    "conv_in": "an elementwise group never joins a conv/matmul (out_elemwise_fusable): that "
               "kernel reads each input element many times, so it would recompute the "
               "elementwise work many times",
    "between": "every op between a group and its post-dominator must be fusable into the "
               "group's kind too: {between} contains a kind above what the group may take",
    "epilogue": "a conv/matmul or a reduction takes only elementwise or broadcast ops after "
                "it (its epilogue, computed as each output element is finished)",
    "injective": "an injective group (transpose, slice, concat) joins only injective or "
                 "simpler ops: an injective op reorders elements, and a reduction or matmul "
                 "after it would read each of them many times",
    "opaque": "an opaque op fuses with nothing",
}


def _explain(args, got: bool) -> str:
    group, between, pdom = args
    names = [k.name for k in between]
    shown = f"joins({group.name}, [{', '.join(names)}], {pdom.name}) returned {got}"
    if group == OpKind.OPAQUE:
        why = _WHY["opaque"]
    elif group in (OpKind.OUT_ELEMWISE_FUSABLE, OpKind.REDUCTION):
        why = _WHY["epilogue"]
    elif group <= OpKind.BROADCAST and pdom == OpKind.OUT_ELEMWISE_FUSABLE:
        why = _WHY["conv_in"]
    elif group == OpKind.INJECTIVE:
        why = _WHY["injective"]
    elif any(k > OpKind.BROADCAST for k in between) and got:
        why = _WHY["between"].format(between=names)
    else:
        why = ("an elementwise/broadcast group joins a post-dominator that is elementwise, "
               "broadcast, injective or a reduction, when everything between is "
               "elementwise/broadcast")
    return f"{shown}, expected {not got}: {why}"


@exercise("06.fusion_rule", points=3, answer="joins",
          title="The fusion rule: when a group joins its post-dominator")
def _check_fusion_rule(answer, rng):
    from ..graph import fuse_ops
    if answer is None:
        raise NotImplementedAnswer("got None instead of your function joins")
    if not callable(answer):
        raise Fail(f"expected your function joins, got {type(answer).__name__}",
                   about_inputs=False)
    graphs = question_graphs() + [random_graph(rng, calls=int(rng.integers(5, 12)))
                                  for _ in range(23)]
    asked = 0
    for g in graphs:
        def judge(n, args, got):
            nonlocal asked
            asked += 1
            want = _reference_joins(*args)
            if not isinstance(got, (bool, np.bool_)):
                raise Fail(f"joins returned {got!r}; return True or False", about_inputs=False)
            if bool(got) != want:
                raise Fail(f"at call {n.name} ({n.op}) of this graph, {_explain(args, bool(got))}"
                           f"\n{g.script()}")

        def rule(*args):
            return call(answer, "joins", *args)
        with trial("a graph of relu/exp, add/mul, transpose, sum and matmul calls"):
            got = fuse_by_rule(g, rule, judge)
        want = [[c.name for c in grp.calls] for grp in fuse_ops(g).groups]
        if sorted(map(sorted, got)) != sorted(map(sorted, want)):
            raise Fail(f"your rule makes the groups {got}, fuse_ops makes {want}\n{g.script()}")
    return f"agrees with fuse_ops on {len(graphs)} graphs, every kind of question asked"


# --- 06.fold_bn ----------------------------------------------------------------------------------
def _conv(x, w, b):
    """A 3x3 convolution, padding 1, in float64 (an independent numpy reference)."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return np.einsum("ncyxhw,ochw->noyx", win, w.astype(np.float64)) + b[:, None, None]


def _bn(h, scale, shift, mean, var, eps):
    c = (slice(None), None, None)
    return (h - mean[c]) / np.sqrt(var[c] + eps) * scale[c] + shift[c]


@exercise("06.fold_bn", points=2, answer="fold_bn",
          title="Fold a BatchNorm into the convolution before it")
def _check_fold_bn(answer, rng):
    cases = [(3, 4, 1e-5), (5, 8, 1e-3), (int(rng.integers(2, 6)), int(rng.integers(2, 9)),
                                          float(rng.choice([1e-2, 0.1])))]
    for ci, co, eps in cases:
        w, b = randn(rng, (co, ci, 3, 3)), randn(rng, (co,))
        scale, shift = 1 + 0.3 * randn(rng, (co,)), randn(rng, (co,))
        mean = randn(rng, (co,))
        var = (rng.random(co) * (20 * eps) + 0.1 * eps).astype(np.float32)  # eps matters
        x = randn(rng, (2, ci, 5, 5))
        want = _bn(_conv(x, w, b), scale, shift, mean, var, eps)
        with trial(f"a conv {ci} -> {co} channels, epsilon={eps:g}"):
            out = call(answer, "fold_bn", w, b, scale, shift, mean, var, eps)
            if not isinstance(out, tuple) or len(out) != 2:
                raise Fail(f"fold_bn should return a pair (W_folded, b_folded), got "
                           f"{type(out).__name__}", about_inputs=False)
            if not all(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in out):
                got = ", ".join(str(getattr(a, "dtype", type(a).__name__)) for a in out)
                raise Fail(f"fold_bn returned ({got}); return two float32 arrays, the conv's "
                           "dtype", "compute in float64, then .astype(np.float32)",
                           about_inputs=False)
            w2, b2 = out
            if w2.shape != w.shape or b2.shape != b.shape:
                raise Fail(f"the folded weight has shape {w2.shape} and bias {b2.shape}; they "
                           f"keep the conv's shapes, {w.shape} and {b.shape}")
            # s = scale / sqrt(var + eps) reaches ~200 here, so an output near zero is the
            # difference of float32 terms near 1e3: compare on the scale of the outputs
            expect_array("conv(x, W_folded, b_folded)", _conv(x, w2, b2), want,
                         atol=scaled_atol(want), mistakes=[
                (lambda: _bn(_conv(x, w, b), scale, shift, mean, var, 0),
                 "epsilon is missing: divide by sqrt(var + epsilon), not sqrt(var)"),
                (lambda: _bn(_conv(x, w, 0 * b), scale, shift, mean, var, eps),
                 "the conv's own bias b was dropped: it is shifted too, "
                 "b_folded = (b - mean) * s + shift"),
                (lambda: _bn(_conv(x, w, b), scale, shift, 0 * mean, var, eps),
                 "the running mean was not subtracted: b_folded = (b - mean) * s + shift"),
                (lambda: _conv(x, w * (scale / np.sqrt(var + eps))[:, None, None, None], b),
                 "the bias was not folded: besides scaling W, b becomes (b - mean) * s + shift"),
                (lambda: _conv(x, w, (b - mean) * scale / np.sqrt(var + eps) + shift),
                 "the weight was not scaled: each output channel o of W is multiplied by s[o]"),
            ])
    return f"conv with the folded weights matches conv + BatchNorm on {len(cases)} layers"


# --- 06.lifetimes --------------------------------------------------------------------------------
def _reference_lifetimes(steps):
    made = {out: k for k, (out, _) in enumerate(steps)}
    life = {out: [k, k] for out, k in made.items()}
    for k, (_, ins) in enumerate(steps):
        for a in ins:
            if a in life:
                life[a][1] = k
    life[steps[-1][0]][1] = len(steps)
    return {name: tuple(v) for name, v in life.items()}


def _peak(life, sizes, steps):
    return max(sum(sizes[n] for n, (a, b) in life.items() if a <= k <= b)
               for k in range(len(steps)))


def random_steps(rng: np.random.Generator, count: int = 8):
    """A run plan as the exercise sees it: ``[(output, [inputs]), ...]`` in execution order
    (``"x"`` is the model's input), and the bytes of every output."""
    steps, names = [], ["x"]
    for k in range(count):
        ins = sorted({names[-1]} | {names[int(rng.integers(len(names)))]
                                    for _ in range(int(rng.integers(0, 2)))})
        steps.append((f"t{k}", ins))
        names.append(f"t{k}")
    sizes = {out: 64 * int(rng.integers(1, 17)) for out, _ in steps}
    return steps, sizes


@exercise("06.lifetimes", points=2, answer="lifetimes_and_peak",
          title="Lifetimes and the peak bytes of a run plan")
def _check_lifetimes(answer, rng):
    cases = [random_steps(rng, int(rng.integers(4, 12))) for _ in range(6)]
    cases.insert(0, ([("a", ["x"]), ("b", ["a"]), ("c", ["a", "b"]), ("d", ["c"])],
                     {"a": 256, "b": 128, "c": 512, "d": 64}))
    for steps, sizes in cases:
        want = _reference_lifetimes(steps)
        with trial(f"the plan {steps} with sizes {sizes}"):
            out = call(answer, "lifetimes_and_peak", steps, dict(sizes))
            if not isinstance(out, tuple) or len(out) != 2:
                raise Fail("lifetimes_and_peak should return (lifetimes, peak_bytes)",
                           about_inputs=False)
            life, peak = out
            if not isinstance(life, dict):
                raise Fail(f"lifetimes should be a dict name -> (first, last), got "
                           f"{type(life).__name__}", about_inputs=False)
            if "x" in life:
                raise Fail("the lifetimes include the model's input x: only the values the "
                           "steps write are planned (x is the caller's array)")
            got = {k: tuple(v) for k, v in life.items()}
            last = steps[-1][0]
            if set(got) != set(want):
                raise Fail(f"lifetimes has the names {sorted(got)}, expected one per step's "
                           f"output: {sorted(want)}")
            if got[last] != want[last]:
                raise Fail(f"the lifetime of the model's output {last!r} is {got[last]}, "
                           f"expected {want[last]}: the output lives to the end of the run "
                           f"(step {len(steps)}), where the caller reads it")
            for name in want:
                if got[name] != want[name]:
                    raise Fail(f"the lifetime of {name!r} is {got[name]}, expected "
                               f"{want[name]}: from the step that writes it to the last step "
                               "that reads it, both included")
            expected = _peak(want, sizes, steps)
            if peak != expected:
                hint = None
                if peak == max(sum(sizes[n] for n, (a, b) in want.items() if a <= k < b)
                               for k in range(len(steps))):
                    hint = ("a value is still live at the step that reads it last: a step "
                            "needs its inputs and its output at the same time")
                raise Fail(f"peak_bytes is {peak}, expected {expected}: the most bytes live "
                           "at any one step", hint)
    return f"lifetimes and peak bytes right on {len(cases)} plans"


__all__ = ["fuse_by_rule", "post_dominators", "question_graphs", "random_graph", "random_steps"]
