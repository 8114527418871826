"""Structural induction, judged on problem families it has never seen.

    python bench/induction.py                  # judge the corpus the package ships (seconds)
    python bench/induction.py --build          # build the corpus anew (2 processes; 49 min
                                               # on a loaded 2-core Zen 5) and judge it
    python bench/induction.py --build --workers 1   # on one core
    python bench/induction.py --ship           # build it and write it as the shipped corpus
                                               # (mlcbook/train/induction/corpus.json)
    python bench/induction.py --corpus runs.json   # judge a corpus built before
    python bench/induction.py --quick          # a smoke run (its figures mean nothing)

1. Corpus: every candidate start (``mb.train.induction.CANDIDATES``: a linear model; MLPs
   of 1 to 3 hidden layers, narrow and wide, relu and tanh, plain, residual, layer-normed)
   is trained on every problem of ``suite()`` (eight seeded synthetic families at two seeds,
   and the five datasets scikit-learn bundles) at three seeds, for ``--steps`` steps, by
   the training-aware runtime (widening the narrowest layer on loss plateaus). Every
   candidate gets the same budget, so the true rank of any pick is known.
2. Leave one family out: for each family (the bundled datasets are one), fit the
   structure model on the other families' runs and rank the held-out family's candidates.
   Compared picks: induction (the model's first), a random pick, the problem-blind prior
   (the start with the best mean rank on the training families), random search at the
   compute of one run (4 random candidates x steps/4, best by validation at that point),
   and guided search (the same over the model's 4 best-ranked); and a ceiling, not a
   method: the start with the best mean rank on the held-out problem's *other* seeds (how
   much of a start's rank the problem decides at all, the rest being the seed's noise).
3. Mean rank (1 = best of 8) with a 95% bootstrap interval over problems, the interval of
   the paired difference to induction, mean regret (best score - pick's score, accuracy
   or R^2), per-family ranks, and the learning curve of induction as its corpus grows.

The scores are seeded and do not depend on the machine's load; only the times do.
Results: bench/RESULTS_induction.md (one section per CPU) and RESULTS_induction.json.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _common import machine, table, write_results

from mlcbook.train import induction as ind
from mlcbook.train.induction import evaluate as ev

NAMES = {"induction": "induction (the model's first pick)",
         "guided": "guided search (model's top 4, steps/4 each)",
         "search": "random search (4 random, steps/4 each)",
         "blind": "problem-blind prior", "random": "random pick",
         "oracle": "ceiling: best start on the problem's other seeds"}


def build(args) -> tuple[list[dict], float]:
    t0 = time.perf_counter()
    if args.corpus:
        return ind.load_corpus(args.corpus), 0.0
    problems = ind.suite(seeds=(0,) if args.quick else (0, 1), bundled=not args.quick)
    seeds = (0,) if args.quick else tuple(range(args.seeds))
    kw = dict(steps=args.steps, seeds=seeds)
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as ex:
            corpus = ind.build_corpus(problems, ind.CANDIDATES, executor=ex, **kw)
    else:
        corpus = ind.build_corpus(problems, ind.CANDIDATES, **kw)
    return corpus, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run with tiny settings")
    ap.add_argument("--steps", type=int, default=300, help="steps of every run")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per problem and start")
    ap.add_argument("--workers", type=int, default=2, help="processes building the corpus")
    ap.add_argument("--corpus", help="judge this corpus (default: the shipped one)")
    ap.add_argument("--build", action="store_true", help="build the corpus anew, then judge it")
    ap.add_argument("--ship", action="store_true", help="write the package's shipped corpus")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_induction.md")))
    args = ap.parse_args()
    if args.quick:
        args.steps = 40
    if not (args.build or args.ship or args.quick or args.corpus):
        args.corpus = str(ind.SHIPPED)
    corpus, t_corpus = build(args)
    if args.ship and not args.quick:
        ind.save_corpus(corpus, ind.SHIPPED)
    t0 = time.perf_counter()
    cases = ev.leave_one_family_out(corpus)
    result = ev.summary(cases)
    curve = ev.learning_curve(corpus, fractions=(0.25, 0.5, 1.0) if args.quick else
                              (0.25, 0.5, 0.75, 1.0))
    t_judge = time.perf_counter() - t0
    text = report(args, corpus, cases, result, curve, t_corpus, t_judge)
    write_results(args.out, "Structural induction on held-out problem families", text)
    Path(args.out).with_suffix(".json").write_text(json.dumps(
        {"summary": result, "learning_curve": curve, "cases": cases}, indent=1))
    for m in ev.METHODS:
        r = result[m]
        print(f"{NAMES[m]:45s} mean rank {r['mean_rank']:.2f} "
              f"[{r['interval'][0]:.2f}, {r['interval'][1]:.2f}], regret {r['regret']:.4f}")
    print(f"corpus {t_corpus:.0f} s, judging {t_judge:.0f} s; written {args.out}")


def report(args, corpus, cases, result, curve, t_corpus, t_judge) -> str:
    k = cases[0]["candidates"]
    problems = sorted({c["problem"] for c in cases})
    shipped = args.corpus == str(ind.SHIPPED)
    built = ("from the corpus the package ships (`mlcbook/train/induction/corpus.json`, made by "
             "`--ship`: 49 min of real time by 2 processes on a loaded 2-core Zen 5)" if shipped
             else f"loaded from `{args.corpus}`" if args.corpus else
             f"built in {t_corpus:.0f} s of real time ({args.workers} process(es))")
    lines = [f"`python bench/induction.py{' --quick' if args.quick else ''}`: a corpus of "
             f"{len(corpus)} runs ({k} starts x {len(problems)} problems x "
             f"{len({r['seed'] for r in corpus})} seeds, {corpus[0]['steps']} steps each) "
             f"{built}; leave-one-family-out judging and the learning curve in "
             f"{t_judge:.0f} s. {sum(bool(r['rewrites']) for r in corpus)} runs were widened "
             "by the runtime at least once.", "",
             f"Mean rank of each method's pick among the {k} starts (1 = best; true ranks "
             f"from training every start for the full budget) over {len(cases)} held-out "
             "(problem, seed) cases, 95% bootstrap intervals over problems; *induction - "
             "method* is the paired difference of mean ranks (negative: induction better).",
             ""]
    rows = []
    for m in ev.METHODS:
        r = result[m]
        d, (lo, hi) = r["induction_minus"]
        rows.append([NAMES[m], f"{r['mean_rank']:.2f}",
                     f"[{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]",
                     "" if m == "induction" else f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]",
                     f"{r['regret']:.4f}", _compute(m, corpus[0]["steps"])])
    g, (glo, ghi) = ev.bootstrap(cases, lambda c: c["rank"]["guided"] - c["rank"]["search"])
    lines += [table(["method", "mean rank", "95% interval", "induction - method",
                     "regret", "compute (steps)"], rows), "",
              f"Guided search - random search (same compute): {g:+.2f} [{glo:+.2f}, "
              f"{ghi:+.2f}].", ""]
    fams = sorted({c["family"] for c in cases})
    lines += ["Per held-out family (mean rank of the pick; induction's most frequent pick):",
              "", table(["family", "cases", "induction", "blind", "search", "pick"],
                        [_family_row(f, [c for c in cases if c["family"] == f])
                         for f in fams]), "",
              "Learning curve: induction's mean rank when each fold is fit on a share of its "
              "training problems:", "",
              table(["share of training problems", "mean rank"],
                    [[f"{f:.2f}", f"{r:.2f}"] for f, r in curve]), "",
              f"Machine: {machine()}", ""]
    return "\n".join(lines)


def _compute(method: str, steps: int) -> str:
    if method == "induction":
        return f"{steps} (+ the corpus, once)"
    if method == "oracle":
        return "(uses the held-out problem's other seeds)"
    if method in ("search", "guided"):
        return f"{steps} to choose (4 x {steps // 4}), + {steps} to train the pick"
    return str(steps)


def _family_row(fam, cs) -> list:
    picks = [c["pick"] for c in cs]
    mean = {m: sum(c["rank"][m] for c in cs) / len(cs) for m in ("induction", "blind",
                                                                  "search")}
    return [fam, len(cs), f"{mean['induction']:.2f}", f"{mean['blind']:.2f}",
            f"{mean['search']:.2f}", max(sorted(set(picks)), key=picks.count)]


if __name__ == "__main__":
    main()
