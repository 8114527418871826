"""Structural induction vs random architecture search, at equal training budget.

    python bench/induction.py            # the full run (one core, about 2.5 minutes of CPU)
    python bench/induction.py --quick    # a smoke run (seconds; its figures mean nothing)
    python bench/induction.py --ship     # also write the corpus the package ships
                                         # (mlcbook/train/induction/corpus.json, chapter 10)

1. Corpus: every candidate structure (1 or 2 hidden layers of 8, 16, 32 or 64 units) is
   trained on each *corpus* problem (two digits subsets, seven synthetic teacher tasks of
   different size and difficulty, classification and regression) for ``--steps`` steps,
   growing on plateaus and pruning dead units as mb.train.rewrite does; each run records
   the problem's features, the structure it ended with, what was grown/pruned, the score.
2. Model: xgboost depth-2 trees from (problem features, structure) to the score relative
   to the problem's median; its rules and feature importances are written out.
3. Comparison on *held-back* problems (never in the corpus), each with several seeds, at
   ``--budget`` training steps per method: *induction* trains its one proposal for the
   whole budget; *random search* trains ``--trials`` random candidates for
   ``budget / trials`` steps each and keeps the best by validation score; *guided search*
   does the same with the model's ``--trials`` best-ranked candidates. All report the
   validation score (accuracy or R^2), so the searches' figures are optimistic: they also
   selected on it.

The scores do not depend on the machine's load (seeded runs, the graph interpreter), so
the figures are reproducible; only the elapsed time is not. Results: bench/RESULTS_induction.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sklearn.datasets import load_digits

from mlcbook.train import induction as ind
from mlcbook.train.induction.corpus import SHIPPED

CORPUS_SYNTHETIC = [  # (seed, kind, n, d, outputs, difficulty)
    (1, "classification", 400, 8, 3, 0.2), (2, "classification", 800, 16, 5, 0.6),
    (3, "classification", 600, 32, 4, 0.9), (4, "classification", 300, 12, 2, 0.4),
    (5, "regression", 400, 8, 1, 0.3), (6, "regression", 800, 20, 1, 0.7),
    (7, "regression", 500, 32, 1, 0.95)]
HELD_SYNTHETIC = [
    (11, "classification", 600, 10, 3, 0.5), (12, "classification", 700, 24, 6, 0.8),
    (13, "regression", 500, 16, 1, 0.6), (14, "regression", 300, 6, 1, 0.1)]


def _problems(spec):
    return [ind.synthetic(seed, kind, n=n, d=d, outputs=o, difficulty=h)
            for seed, kind, n, d, o, h in spec]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run with tiny settings")
    ap.add_argument("--steps", type=int, default=120, help="steps of each corpus run")
    ap.add_argument("--budget", type=int, default=480, help="steps per method and problem")
    ap.add_argument("--trials", type=int, default=4, help="random search's candidates")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per held-back problem")
    ap.add_argument("--ship", action="store_true", help="write the package's shipped corpus")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_induction.md")))
    args = ap.parse_args()
    digits = load_digits()
    corpus_problems = [ind.digits(digits, n=500, seed=0), ind.digits(digits, n=1200, seed=1)]
    corpus_problems += _problems(CORPUS_SYNTHETIC)
    held = _problems(HELD_SYNTHETIC) + [ind.digits(digits, n=800, seed=2)]
    candidates = ind.CANDIDATES
    if args.quick:
        corpus_problems, held = corpus_problems[2:5], held[:1]
        candidates = ((8,), (32,), (16, 16))
        args.steps, args.budget, args.trials, args.seeds = 30, 60, 2, 1
    t0 = time.perf_counter()
    corpus = ind.build_corpus(corpus_problems, candidates, steps=args.steps)
    t_corpus = time.perf_counter() - t0
    if args.ship and not args.quick:
        ind.save_corpus(corpus, SHIPPED)
    model = ind.fit(corpus)
    t1 = time.perf_counter()
    result = ind.compare(model, held, args.budget, args.trials, tuple(range(args.seeds)),
                         candidates)
    t_compare = time.perf_counter() - t1
    _write(args, corpus, model, result, t_corpus, t_compare)
    print(f"median score: induction {result['median_induction']:.4f}, guided search "
          f"{result['median_guided']:.4f}, random search {result['median_random']:.4f}; "
          f"better than random in {result['wins']} / {result['guided_wins']} of "
          f"{result['runs']}; written {args.out}")


def _write(args, corpus, model, result, t_corpus, t_compare) -> None:
    lines = ["# Structural induction vs random architecture search", "",
             f"`python bench/induction.py{' --quick' if args.quick else ''}`: corpus of "
             f"{len(corpus)} runs ({args.steps} steps each) on "
             f"{len({r['problem'] for r in corpus})} problems, built in {t_corpus:.0f} s; "
             f"comparison at a budget of {args.budget} steps per method (random search: "
             f"{args.trials} candidates x {args.budget // args.trials} steps), "
             f"{args.seeds} seed(s) per held-back problem, in {t_compare:.0f} s.", "",
             "Scores are validation accuracy (classification) or R^2 (regression). Induction "
             "trains its one proposal for the whole budget; random and guided search split "
             "it over their candidates (random ones, or the model's best-ranked) and keep the "
             "best by the validation score they report (optimistic for them).", "",
             f"**Median score: induction {result['median_induction']:.4f}, guided search "
             f"{result['median_guided']:.4f}, random search {result['median_random']:.4f}.** "
             f"Better than random search in {result['wins']} (induction) and "
             f"{result['guided_wins']} (guided) of {result['runs']} runs, tied in "
             f"{result['ties']} and {result['guided_ties']}.", "",
             "| problem | seed | proposal | induction | guided pick | guided | random pick | "
             "random |", "|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['problem']} | {r['seed']} | {tuple(r['proposal'])} -> "
                     f"{tuple(r['induction_final'])} | {r['induction']:.4f} | "
                     f"{tuple(r['guided_pick'])} | {r['guided']:.4f} | "
                     f"{tuple(r['random_pick'])} | {r['random']:.4f} |")
    grown = sum(r["grown"] > 0 for r in corpus)
    pruned = sum(r["pruned"] > 0 for r in corpus)
    best = {}
    for r in corpus:
        if r["problem"] not in best or r["score"] > best[r["problem"]]["score"]:
            best[r["problem"]] = r
    lines += ["", "## The corpus", "",
              f"{grown} of {len(corpus)} runs grew a layer on a plateau, {pruned} pruned dead "
              "units. Best structure per corpus problem (start -> end):", "",
              "| problem | linear score | nonlinear gain | best | score |", "|---|---|---|---|---|"]
    for name, r in best.items():
        lines.append(f"| {name} | {r['features']['linear_score']:.3f} | "
                     f"{r['features']['nonlinear_gain']:+.3f} | {tuple(r['initial'])} -> "
                     f"{tuple(r['final']['widths'])} | {r['score']:.4f} |")
    imp = sorted(model.importances().items(), key=lambda kv: -kv[1])
    lines += ["", "## What the model learned", "", "Feature importances (share of gain): " +
              ", ".join(f"{k} {v:.2f}" for k, v in imp if v > 0), "",
              "The first trees as rules (the leaf is the expected score above the problem's "
              "median structure):", "", "```", model.rules(), "```", ""]
    Path(args.out).write_text("\n".join(lines))
    Path(args.out).with_suffix(".json").write_text(json.dumps(
        {k: v for k, v in result.items()}, indent=1))


if __name__ == "__main__":
    main()
