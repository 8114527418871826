"""Whole models: ``mb.compile`` (default schedules, no tuning) beside onnxruntime, same thread count.

    python bench/e2e.py                 # MLP and CNN, 1 and 2 threads, prints a table
    python bench/e2e.py --rounds 15     # more rounds on a busy machine
    python bench/e2e.py --records bench/tune_records   # also mb.compile(..., tuning_records=)
    python bench/e2e.py --records bench/tune_records_remeasured   # after tune.py --remeasure
    python bench/e2e.py --rounds 2 --models cnn --no-avx2 --out /tmp/e2e.md   # a smoke run

Models (built by mlcbook.frontend.examples, fixed random weights):

* MLP: 784-512-256-10 (Gemm + ReLU), batch 64;
* CNN: two stages of 3x3 conv (padding 1) + ReLU + 2x2 max pool, then a linear layer,
  batch 8 of 1x28x28;
* ResNet: ResNet-18-style (basic blocks, residual adds, BatchNorm), batch 1 of 3x224x224;
* Inception: Inception-v1-style (four-branch modules joined by Concat), batch 1 of 3x224x224.

``--models mlp,cnn`` picks some; ``--opt-level`` compiles at another level (3 is mb.compile's
default). ``--records DIR`` adds a third contender for every model with tuning records
``DIR/<model>.jsonl`` (written by ``python bench/tune.py --models``): the same model
compiled with ``mb.compile(..., tuning_records=...)``.

On a host with AVX-512 each model is also compiled for ``-mcpu=x86-64-v3`` (the AVX2 code a
laptop runs, :data:`_common.AVX2_TARGET`) and measured in the same rounds, interleaved with
the others, so one machine shows both code paths: the "AVX2 code" columns, its ratio to
onnxruntime beside the native code's. ``--no-avx2`` leaves it out (a quicker run).

Each time is the median latency of a full call (``exe(x)`` including its input checks;
``session.run``) over interleaved rounds (see ``_common.measure``). The contenders of one
model at one thread count are interleaved with each other only, so each round compares them
side by side; the ratio is mlcbook / onnxruntime *per round*, and the table gives the median
of those ratios with its 95% interval (lower is better). onnxruntime gets one session per
thread count; mlcbook's thread pool is set to the same count around each call.

``--processes N`` runs the whole measurement in N fresh processes one after another and
pools their rounds: where a process's memory lands (which physical pages, so which cache
sets) changes a kernel's speed from process to process, and one process can be lucky. The
table then also lists each process's median ratio.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from _common import (AVX2_TARGET, add_avx2_argument, by_key, Case, has_avx512, machine,
                     measure, ort_session, paired_ratio, Ratio, table, write_results)

MODELS = ("mlp", "cnn", "resnet", "inception")
THREADS = (1, 2)


def model_of(name: str):
    """The ONNX model called ``name`` and its input shape."""
    from mlcbook.frontend import examples
    if name == "mlp":
        return examples.mlp(batch=64), (64, 784)
    if name == "cnn":
        return examples.cnn(batch=8), (8, 1, 28, 28)
    return getattr(examples, name)(batch=1, size=224), (1, 3, 224, 224)


def records_path(records, name: str):
    """The tuning records of model ``name`` in directory ``records``, or None."""
    if records is None:
        return None
    path = Path(records) / f"{name}.jsonl"
    return path if path.exists() else None


#: in a records directory: per model the trials and wall seconds its tuning took
#: (``{"mlp": {"trials": 1000, "seconds": 1234.5}}``), written by ``bench/tune.py --models``
TUNING_FILE = "tuning.json"


def measured_points(path) -> int:
    """The trials in records file ``path``: distinct points measured, the default schedule's
    not counted (a point a search measured again to confirm it is one trial)."""
    from mlcbook.tune.database import DEFAULT_TRACE, Database
    return len({(r.workload, json.dumps(r.decisions, sort_keys=True))
                for r in Database(str(path)).records() if r.trace != DEFAULT_TRACE})


def trials_in(records, names) -> dict:
    """Per model with records in directory ``records``: (trials measured, tuning seconds),
    both read from ``records/tuning.json``; without it the trials are counted from the
    records (:func:`measured_points`) and the seconds are NaN."""
    timing = Path(records) / TUNING_FILE
    seconds = json.loads(timing.read_text()) if timing.exists() else {}
    out = {}
    for name in names:
        path = records_path(records, name)
        if path is not None:
            counted = measured_points(path)
            run = seconds.get(name, {})
            # re-measured records hold a few per kernel: the tuning run's count is the truth
            out[name] = (int(run.get("trials", counted)), float(run.get("seconds", float("nan"))))
    return out


#: the contender of the same model built for AVX2 (``-mcpu=x86-64-v3``) on an AVX-512 host
AVX2 = "mlcbook AVX2 code"


def cases(models=MODELS, opt_level: int = 3, records=None,
          avx2: bool = False) -> tuple[list[Case], dict]:
    """The cases to measure, and per model (compile seconds, kernel calls); with ``records``
    (a directory) also each model compiled with its tuning records, if it has some; with
    ``avx2`` also each model compiled for :data:`_common.AVX2_TARGET` (contender
    :data:`AVX2`)."""
    import mlcbook as mb
    out, info = [], {}
    for name in models:
        model, shape = model_of(name)
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        t0 = time.perf_counter()
        exe = mb.compile(mb.from_onnx(model), opt_level=opt_level)
        info[name] = (time.perf_counter() - t0, exe.stats["calls"], exe.stats["ops"],
                      exe.stats["arena_bytes"], exe.stats["unplanned_bytes"])
        got = exe(x)
        tuned = None
        path = records_path(records, name)
        if path is not None:
            tuned = mb.compile(mb.from_onnx(model), opt_level=opt_level,
                               tuning_records=str(path))
            info[name] += (tuned.stats["tuned_kernels"],)
        avx2_exe = mb.compile(mb.from_onnx(model), target=AVX2_TARGET,
                              opt_level=opt_level) if avx2 else None
        for t in THREADS:
            sess = ort_session(model, t)
            want = sess.run(None, {"input": x})[0]
            if not np.allclose(got, want, rtol=1e-3, atol=1e-4):
                raise SystemExit(f"{name}: mlcbook and onnxruntime disagree "
                                 f"(max difference {np.abs(got - want).max():.2e})")
            out.append(Case("e2e", (name, "onnxruntime"), t,
                            lambda s=sess, x=x: s.run(None, {"input": x})))
            out.append(Case("e2e", (name, "mlcbook"), t, lambda e=exe, x=x: e(x)))
            if tuned is not None:
                diff = np.abs(tuned(x) - want).max()
                if diff > 1e-3 * max(1.0, np.abs(want).max()):
                    raise SystemExit(f"{name}: tuned mlcbook and onnxruntime disagree "
                                     f"(max difference {diff:.2e})")
                out.append(Case("e2e", (name, "mlcbook tuned"), t, lambda e=tuned, x=x: e(x)))
            if avx2_exe is not None:
                diff = np.abs(avx2_exe(x) - want).max()
                if diff > 1e-3 * max(1.0, np.abs(want).max()):
                    raise SystemExit(f"{name}: mlcbook's AVX2 code and onnxruntime disagree "
                                     f"(max difference {diff:.2e})")
                out.append(Case("e2e", (name, AVX2), t, lambda e=avx2_exe, x=x: e(x)))
    return out, info


def _ratio(runs: list[dict], key, t: int, peer: str = "onnxruntime") -> tuple[Ratio, list]:
    """The paired ratio of contender ``key`` over ``peer`` at ``t`` threads, pooled over the
    runs (each a ``by_key`` dict of one process), and each run's median ratio."""
    pooled = [Case("e2e", k, t, None, seconds=[s for run in runs for s in run[(k, t)].seconds])
              for k in (key, (key[0], peer))]
    return (paired_ratio(*pooled),
            [paired_ratio(run[(key, t)], run[((key[0], peer), t)]).median for run in runs])


def _per_process(medians: list) -> str:
    return " / ".join(f"{m:.2f}" for m in medians) if len(medians) > 1 else "-"


def _pooled(runs: list[dict], key, t: int) -> float:
    return statistics.median(s for run in runs for s in run[(key, t)].seconds)


def report(runs: list[dict], info: dict) -> str:
    """The table: per model and thread count mlcbook's and onnxruntime's latency and their
    paired ratio; with the AVX2 contender measured (see :func:`cases`), its latency and ratio
    to onnxruntime too."""
    avx2 = any(k[0][1] == AVX2 for k in runs[0])
    rows = []
    for name in info:
        compile_s, calls, ops, arena, unplanned = info[name][:5]
        for t in THREADS:
            ratio, each = _ratio(runs, (name, "mlcbook"), t)
            row = [name, t, f"{_pooled(runs, (name, 'mlcbook'), t) * 1e3:.3f}",
                   f"{_pooled(runs, (name, 'onnxruntime'), t) * 1e3:.3f}", str(ratio),
                   _per_process(each)]
            if avx2:
                avx2_ratio, _ = _ratio(runs, (name, AVX2), t)
                row += [f"{_pooled(runs, (name, AVX2), t) * 1e3:.3f}", str(avx2_ratio)]
            rows.append(row + [f"{calls} / {ops}",
                               f"{arena / 2**20:.1f} / {unplanned / 2**20:.1f}",
                               f"{compile_s:.2f}"])
    headers = ["model", "threads", "mlcbook ms", "onnxruntime ms", "ratio (95% interval)",
               "ratio per process"]
    if avx2:
        headers += ["AVX2 code ms", "AVX2 code / onnxruntime (95% interval)"]
    return table(headers + ["kernel calls / ops", "arena / unplanned MiB", "compile s"], rows)


def report_tuned(runs: list[dict], info: dict, tuning: dict) -> str:
    """Tuned vs default vs onnxruntime, for the models with records; ``tuning`` maps a model
    to (trials, tuning seconds) when known."""
    rows = []
    for name in info:
        if ((name, "mlcbook tuned"), THREADS[0]) not in runs[0]:
            continue
        trials, secs = tuning.get(name, ("?", float("nan")))
        for t in THREADS:
            tu, de, ort = (_pooled(runs, (name, k), t)
                           for k in ("mlcbook tuned", "mlcbook", "onnxruntime"))
            ratio, each = _ratio(runs, (name, "mlcbook tuned"), t)
            rows.append([name, t, f"{tu * 1e3:.3f}", f"{de * 1e3:.3f}", f"{ort * 1e3:.3f}",
                         str(ratio), _per_process(each),
                         "yes" if ratio.median <= 1 else "no",
                         f"{info[name][5]}", str(trials),
                         "?" if secs != secs else f"{secs / 60:.1f}"])
    return table(["model", "threads", "tuned ms", "default ms", "onnxruntime ms",
                  "tuned / onnxruntime (95% interval)", "per process", "met (median <= 1)",
                  "tuned kernels", "trials", "tuning minutes"], rows)


def _in_this_process(args) -> tuple[dict, dict]:
    """Measure here: (``by_key`` of the measured cases, per-model info)."""
    cs, info = cases(tuple(args.models.split(",")), args.opt_level, args.records,
                     avx2=not args.no_avx2 and has_avx512())
    measure(cs, args.rounds, group=lambda c: (c.key[0], c.threads))
    return by_key(cs), info


def _in_processes(args) -> tuple[list[dict], dict]:
    """Measure in ``args.processes`` fresh processes, one after another."""
    argv = ["--rounds", str(args.rounds), "--models", args.models,
            "--opt-level", str(args.opt_level)]
    if args.records:
        argv += ["--records", args.records]
    if args.no_avx2:
        argv.append("--no-avx2")
    runs, info = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.processes):
            raw = Path(tmp) / f"run{k}.json"
            cmd = [sys.executable, __file__, *argv, "--processes", "1", "--raw", str(raw)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            data = json.loads(raw.read_text())
            info = {name: tuple(v) for name, v in data["info"].items()}
            runs.append({(tuple(c["key"]), c["threads"]):
                         Case("e2e", tuple(c["key"]), c["threads"], None, seconds=c["seconds"])
                         for c in data["cases"]})
            print(f"process {k + 1} of {args.processes} done", file=sys.stderr)
    return runs, info


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--processes", type=int, default=1,
                    help="measure in this many fresh processes and pool their rounds")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--opt-level", type=int, default=3)
    ap.add_argument("--records", default=None,
                    help="directory of tuning records <model>.jsonl (bench/tune.py --models "
                    "or `mlcbook tune MODEL.onnx -o DIR/<model>.jsonl`)")
    add_avx2_argument(ap, "models")
    ap.add_argument("--out", default=None,
                    help="the results file (default: bench/RESULTS_e2e.md, or "
                    "bench/RESULTS_e2e_tuned.md with --records); this CPU's section of it is "
                    "replaced, other CPUs' are kept")
    ap.add_argument("--raw", default=None, help=argparse.SUPPRESS)   # a child's measurements
    argv = sys.argv[1:] if argv is None else list(argv)
    args = ap.parse_args(argv)
    if args.processes < 1:
        ap.error(f"--processes must be at least 1, got {args.processes}")
    if args.processes > 1:
        runs, info = _in_processes(args)
    else:
        run, info = _in_this_process(args)
        runs = [run]
        if args.raw:
            Path(args.raw).write_text(json.dumps({
                "info": info,
                "cases": [{"key": list(c.key), "threads": c.threads, "seconds": c.seconds}
                          for c in run.values()]}))
            return
    title = "End to end: mlcbook (default schedules) vs onnxruntime"
    avx2 = any(k[0][1] == AVX2 for k in runs[0])
    text = (f"Written by `python bench/e2e.py{' ' + ' '.join(argv) if argv else ''}` "
            f"({args.rounds} rounds in each of {args.processes} process(es); each time the "
            f"median over all rounds; each ratio the median of per-round ratios of contenders "
            f"measured side by side, with its 95% interval; same thread count for both; "
            f"opt_level {args.opt_level}; ratio = mlcbook / onnxruntime, lower is better"
            + (f"; AVX2 code: the same models compiled for `{AVX2_TARGET}`, measured in the "
               "same rounds" if avx2 else "") + f").\n\n"
            f"{report(runs, info)}\n\nMachine: {machine()}\n")
    if args.records:
        tuned = report_tuned(runs, info, trials_in(args.records, info))
        text += f"\n## Tuned (records in {args.records})\n\n{tuned}\n"
    print(f"# {title}\n\n{text}")
    name = "RESULTS_e2e_tuned.md" if args.records else "RESULTS_e2e.md"
    write_results(args.out or Path(__file__).resolve().parent / name, title, text)


if __name__ == "__main__":
    main()
