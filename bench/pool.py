"""The thread pool's costs: an empty parallel loop, the CNN of bench/e2e.py kernel by kernel,
at 1 and 2 threads, and what chunking does to the whole model.

    python bench/pool.py                # prints a table, writes RESULTS_pool.md
    python bench/pool.py --rounds 15    # more rounds on a busy machine

* **launch**: a kernel whose parallel loop has 2 empty iterations, called back to back (the
  workers spin between calls), and called after 20 ms idle (the workers sleep), without
  and with ``pool.wake()`` 1 ms before the call (what an executable does when a run
  starts);
* **kernels**: each kernel of the CNN (batch 8) at 1 and 2 threads, as a run calls it;
* **model**: the whole CNN call at 1 and 2 threads, with the pool's dynamic chunks and
  with one static chunk per thread (``chunks_per_thread = 1``), beside onnxruntime.

Figures are medians over interleaved rounds (see ``_common.measure``), except the idle
launches: the median of single calls, each after its own idle gap.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from _common import Case, by_key, machine, measure, ort_session, table, write_results

EMPTY = '''
@T.prim_func(root=False)
def empty(X: T.Buffer((2,), "int32"), Y: T.Buffer((2,), "int32")):
    for i in T.parallel(2):
        Y[i] = X[i]
'''


def empty_kernel():
    import mlcbook as mb
    from mlcbook.runtime.thread_pool import launcher_address
    k = mb.build(mb.script.parse(EMPTY))
    x, y = np.ones(2, "int32"), np.zeros(2, "int32")
    fn, ptrs = k.native_function(), k.check_args((x, y))
    launcher = launcher_address()
    return lambda a=(x, y): fn(*ptrs, launcher)


def idle_launches(call, threads: int, wake: bool, n: int) -> float:
    """Median seconds of ``call()`` made after 20 ms without parallel loops."""
    import mlcbook as mb
    from mlcbook.runtime.native_pool import native_pool
    pool, times = native_pool(), []
    with mb.runtime.num_threads(threads):
        call()
        for _ in range(n):
            time.sleep(0.019)
            if wake:
                pool.wake()
            time.sleep(0.001)
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cnn_cases() -> tuple[list[Case], list[str]]:
    import mlcbook as mb
    from mlcbook.runtime.native_pool import native_pool
    from mlcbook.runtime.thread_pool import launcher_address
    from e2e import model_of
    model, shape = model_of("cnn")
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    exe = mb.compile(mb.from_onnx(model))
    exe(x)
    ptr = list(exe._arena()[1])
    for slot, k in exe._input_slots:
        ptr[slot] = x.__array_interface__["data"][0]
    launcher = launcher_address()
    cases, names = [], []
    for (name, args), (kernel, _, _) in zip(exe.plan.steps, exe._calls):
        fn, a = kernel.native_function(), [ptr[i] for i in args] + [launcher]
        names.append(name)
        cases += [Case("kernel", (name,), t, lambda fn=fn, a=a: fn(*a)) for t in (1, 2)]
    pool = native_pool()

    def run(chunks: int):
        def call():
            pool.chunks_per_thread = chunks
            exe(x)
        return call
    for t in (1, 2):
        cases.append(Case("model", ("mlcbook, dynamic chunks",), t, run(pool.chunks_per_thread)))
        cases.append(Case("model", ("mlcbook, one static chunk per thread",), t, run(1)))
        sess = ort_session(model, t)
        cases.append(Case("model", ("onnxruntime",), t,
                          lambda s=sess: s.run(None, {"input": x})))
    return cases, names


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS_pool.md"),
                    help="the results file: this CPU's section of it is replaced, other "
                    "CPUs' are kept")
    args = ap.parse_args(argv)
    empty = empty_kernel()
    cases = [Case("launch", ("back to back",), t, empty) for t in (1, 2)]
    more, names = cnn_cases()
    cases += more
    measure(cases, args.rounds)
    by = by_key(cases)
    idle = {(t, w): idle_launches(empty, t, w, 10 * args.rounds) for t in (1, 2)
            for w in (False, True)}
    us = lambda s: f"{s * 1e6:.1f}"   # noqa: E731
    launch = table(["empty parallel loop", "1 thread us", "2 threads us"], [
        ["back to back (workers spin)"] + [us(by[(("back to back",), t)].median) for t in (1, 2)],
        ["after 20 ms idle (workers asleep)"] + [us(idle[(t, False)]) for t in (1, 2)],
        ["after 20 ms idle, pool.wake() 1 ms before"] + [us(idle[(t, True)]) for t in (1, 2)]])
    rows = []
    for n in names:
        a, b = by[((n,), 1)].median, by[((n,), 2)].median
        rows.append([n, us(a), us(b), f"{a / b:.2f}x"])
    kernels = table(["CNN kernel", "1 thread us", "2 threads us", "speed-up"], rows)
    rows = []
    for what in ("mlcbook, dynamic chunks", "mlcbook, one static chunk per thread",
                 "onnxruntime"):
        a, b = by[((what,), 1)].median, by[((what,), 2)].median
        rows.append([what, f"{a * 1e3:.3f}", f"{b * 1e3:.3f}", f"{a / b:.2f}x"])
    model = table(["CNN (batch 8)", "1 thread ms", "2 threads ms", "speed-up"], rows)
    title = "The thread pool: launch costs, the CNN's kernels at 1 and 2 threads"
    text = (f"Written by `python bench/pool.py` ({args.rounds} rounds; medians over "
            f"interleaved rounds).\n\n{launch}\n\n{kernels}\n\n{model}\n\n"
            f"Machine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
