"""Training: time per step of mlcbook's compiled training step vs the same step in JAX (XLA)
and in numpy.

    python bench/train.py               # the MLP and the CNN, 1 and 2 threads
    python bench/train.py --rounds 15   # more rounds on a busy machine
    python bench/train.py --models mlp --no-jax

The models: the 784-512-256-10 MLP (``mb.train.mlp``) and ``mb.train.cnn`` (two 3x3
convs, a 2x2 max pool, a linear layer; 8x8 inputs), batch 64. The step: forward, softmax
cross-entropy, backward, and momentum SGD (lr 0.01, momentum 0.9) updating parameters and
momentum buffers in place. mlcbook runs it as the kernels of ``mb.train.compile_step``
(default schedules, no tuning). JAX runs the same model, written with ``jax.numpy`` and
``lax.conv_general_dilated``, as one ``jax.jit`` function of ``value_and_grad`` and the
update (buffers donated, so XLA may update them in place), on XLA's CPU backend. numpy
runs the MLP as float32 array calls on its BLAS, written the way one would by hand.

All start from the same weights and are checked to give the same losses for three steps
before timing (JAX to ``JAX_RTOL``, numpy to 1e-4). Thread counts: mlcbook's pool and
numpy's BLAS are set in-process (``_common.measure``); XLA's threads cannot be limited by
its flags alone, so JAX runs in a child process pinned to 1 or 2 cores
(``os.sched_setaffinity`` before jax is imported: every thread XLA starts inherits it),
one child per thread count. A JAX measurement asks its child for a batch of steps lasting
about ``_common.measure``'s minimum and divides; the pipe's round trip is a few tens of
microseconds of 30 ms.

Each figure is the median over interleaved rounds of one run; the cases of one model run
in the same rounds, and every ratio is the median of per-round ratios with its 95%
interval (``_common.paired_ratio``). The issue's targets: mlcbook / JAX at most 1.0x at
1 thread; mlcbook's 2-thread step at least 1.6x faster than its 1-thread step (1-thread
time / 2-thread time); numpy / mlcbook at least 1.5x (an earlier target, for the MLP).
Without jax installed the JAX columns are left out with a note.
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import Case, by_key, machine, measure, paired_ratio, table, write_results

SIZES, BATCH, LR, MOMENTUM = (784, 512, 256, 10), 64, 0.01, 0.9
THREADS = (1, 2)
MODELS = ("mlp", "cnn")
TARGET = 1.5            # numpy / mlcbook, the MLP
JAX_TARGET = 1.0        # mlcbook / JAX at 1 thread, at most
SPEEDUP_TARGET = 1.6    # mlcbook's 1-thread time / its 2-thread time, at least
#: the relative difference allowed between mlcbook's and JAX's losses (float32; the two
#: sum in different orders)
JAX_RTOL = 2e-6
CHECKED_STEPS = 3


class NumpyMLP:
    """The same training step in float32 numpy."""

    def __init__(self, params: dict):
        self.p = {k: np.array(v, np.float32) for k, v in params.items()}
        self.buf = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.layers = len(SIZES) - 1

    def step(self, x, y) -> float:
        p, acts, h = self.p, [], x
        for k in range(1, self.layers + 1):
            acts.append(h)
            h = h @ p[f"fc{k}.weight"].T
            h += p[f"fc{k}.bias"]
            if k < self.layers:
                np.maximum(h, 0, out=h)
        z = h - h.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        rows = np.arange(len(y))
        loss = float(np.mean(np.log(s[:, 0]) - z[rows, y]))
        g = e / s
        g[rows, y] -= 1
        g /= len(y)
        for k in range(self.layers, 0, -1):
            a, w = acts[k - 1], p[f"fc{k}.weight"]
            gw, gb = g.T @ a, g.sum(axis=0)
            if k > 1:
                g = g @ w
                g *= a > 0
            for name, grad in ((f"fc{k}.weight", gw), (f"fc{k}.bias", gb)):
                buf = self.buf[name]
                buf *= MOMENTUM
                buf += grad
                p[name] -= LR * buf
        return loss


# --- the JAX twin, run in a pinned child process ----------------------------------------------
def jax_step(kind: str, names: list[str]):
    """The jitted JAX training step of model ``kind`` ("mlp" or "cnn") whose parameters are
    ``names`` (mlcbook's names, e.g. ``fc1.weight``): ``step(params, bufs, x, y, lr) ->
    (params, bufs, loss)`` on dicts of arrays, the loss taken before the update."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def linear(h, p, name):
        return h @ p[f"{name}.weight"].T + p[f"{name}.bias"]

    def mlp(p, x):
        layers = sum(n.endswith(".weight") for n in names)
        h = x
        for k in range(1, layers + 1):
            h = linear(h, p, f"fc{k}")
            if k < layers:
                h = jax.nn.relu(h)
        return h

    def cnn(p, x):
        h, k = x, 1
        while f"conv{k}.weight" in p:
            h = lax.conv_general_dilated(h, p[f"conv{k}.weight"], (1, 1), ((1, 1), (1, 1)),
                                         dimension_numbers=("NCHW", "OIHW", "NCHW"))
            h = jax.nn.relu(h + p[f"conv{k}.bias"][None, :, None, None])
            k += 1
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return linear(h.reshape(h.shape[0], -1), p, "fc")

    forward = {"mlp": mlp, "cnn": cnn}[kind]

    def loss_fn(p, x, y):
        logp = jax.nn.log_softmax(forward(p, x), axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    def step(p, bufs, x, y, lr):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        bufs = {n: MOMENTUM * bufs[n] + g[n] for n in p}
        return {n: p[n] - lr * bufs[n] for n in p}, bufs, loss

    return jax.jit(step, donate_argnums=(0, 1))


def _worker() -> None:
    """The child's loop: pickled requests on stdin, pickled replies on the stdout it was
    given (everything else printed goes to stderr)."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    import jax
    import jax.numpy as jnp
    state = {}

    def one():
        p, b = state["p"], state["b"]
        state["p"], state["b"], loss = state["step"](p, b, *state["data"])
        return float(loss)     # waits for the step, as mlcbook's step returns its loss

    while True:
        try:
            request = pickle.load(inp)
        except EOFError:     # the parent is gone
            return
        op = request[0]
        if op == "init":
            _, kind, params, x, y = request
            state["step"] = jax_step(kind, list(params))
            state["p"] = {n: jnp.asarray(v) for n, v in params.items()}
            state["b"] = {n: jnp.zeros_like(v) for n, v in state["p"].items()}
            state["data"] = (jnp.asarray(x), jnp.asarray(y), jnp.float32(LR))
            reply = [one() for _ in range(CHECKED_STEPS)]
        elif op == "calibrate":
            for _ in range(3):
                one()
            t0 = time.perf_counter()
            for _ in range(5):
                one()
            reply = ((time.perf_counter() - t0) / 5, sorted(os.sched_getaffinity(0)),
                     jax.__version__, len(os.listdir("/proc/self/task")))
        elif op == "run":
            for _ in range(request[1]):
                one()
            reply = None
        else:
            return
        pickle.dump(reply, out)
        out.flush()


#: the child's first statements: pinned to its cores before anything starts a thread, then
#: this file's worker loop (``python -c _BOOT path cores``)
_BOOT = ("import os, runpy, sys; "
         "os.sched_setaffinity(0, {int(c) for c in sys.argv[2].split(',')}); "
         "sys.path.insert(0, os.path.dirname(sys.argv[1])); "
         "sys.argv = [sys.argv[1], '--jax-worker']; "
         "runpy.run_path(sys.argv[0], run_name='__main__')")


def jax_missing() -> str | None:
    """Why the JAX columns cannot be measured here (None if they can)."""
    try:
        import jax  # noqa: F401
    except ImportError:
        return "jax is not installed (pip install -e '.[bench]'), so the JAX columns are left out"
    if not hasattr(os, "sched_setaffinity"):
        return "this OS cannot pin a process to cores, so the JAX columns are left out"
    return None


class JaxContender:
    """A child process running the JAX step of one model on ``threads`` cores."""

    def __init__(self, kind: str, threads: int, params: dict, x, y):
        cores = sorted(os.sched_getaffinity(0))[:threads]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(Path(__file__).resolve()),
             ",".join(map(str, cores))], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.losses = self._ask("init", kind, params, x, y)
        per_step, self.cores, self.version, self.os_threads = self._ask("calibrate")
        self.batch = max(1, math.ceil(0.03 / per_step))   # steps per measured call

    def _ask(self, *request):
        pickle.dump(request, self.proc.stdin)
        self.proc.stdin.flush()
        try:
            return pickle.load(self.proc.stdout)
        except EOFError:
            raise SystemExit(f"the JAX child process failed (exit code {self.proc.wait()}); "
                             "its error is printed above") from None

    def run(self) -> None:
        self._ask("run", self.batch)

    def close(self) -> None:
        if self.proc.poll() is None:
            pickle.dump(("quit",), self.proc.stdin)
            self.proc.stdin.close()
            self.proc.wait()


# --- the cases ---------------------------------------------------------------------------------
def _model(kind: str):
    import mlcbook as mb
    rng = np.random.default_rng(0)
    if kind == "mlp":
        x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
        model = mb.train.mlp(SIZES, batch=BATCH, seed=0)
    else:
        model = mb.train.cnn(batch=BATCH, seed=0)
        x = rng.standard_normal(model.params[0].shape).astype(np.float32)
    return model, x, rng.integers(0, model.ret_type.shape[-1], BATCH)


def _check(who: str, got: list[float], want: list[float], rtol: float) -> float:
    worst = max(abs(g - w) / abs(w) for g, w in zip(got, want))
    if worst > rtol:
        raise SystemExit(f"mlcbook and {who} disagree: losses {want} vs {got}")
    return worst


def cases(kind: str, use_jax: bool) -> tuple[list[Case], dict]:
    import mlcbook as mb
    model, x, y = _model(kind)
    t0 = time.perf_counter()
    trainer = mb.train.compile_step(model, "cross_entropy",
                                    mb.train.SGD(lr=LR, momentum=MOMENTUM))
    info = {"compile_s": time.perf_counter() - t0, "calls": len(trainer.executable.plan.steps),
            "jax": {}}
    start = {n: v.copy() for n, v in trainer.params.items()}
    if use_jax:
        info["jax"] = {t: JaxContender(kind, t, start, x, y) for t in THREADS
                       if t <= len(os.sched_getaffinity(0))}
    ref = NumpyMLP(start) if kind == "mlp" else None
    losses = [trainer.step(x, y) for _ in range(CHECKED_STEPS)]
    if ref is not None:
        _check("numpy", [ref.step(x, y) for _ in range(CHECKED_STEPS)], losses, 1e-4)
    info["jax_diff"] = max((_check(f"JAX ({t} threads)", j.losses, losses, JAX_RTOL)
                            for t, j in info["jax"].items()), default=None)
    out = []
    for t in THREADS:
        out.append(Case(kind, "mlcbook", t, lambda tr=trainer: tr.step(x, y)))
        if ref is not None:
            out.append(Case(kind, "numpy", t, lambda r=ref: r.step(x, y)))
        if t in info["jax"]:
            out.append(Case(kind, "jax", t, info["jax"][t].run))
    return out, info


def _ms(c: Case | None) -> str:
    return "—" if c is None else f"{c.median * 1e3:.3f}"


def report(kind: str, cs: list[Case], info: dict) -> str:
    by = by_key(cs)
    rows = []
    for t in THREADS:
        mine, jx, npy = by[("mlcbook", t)], by.get(("jax", t)), by.get(("numpy", t))
        vs_jax = vs_np = "—"
        if jx is not None:
            r = paired_ratio(mine, jx)
            vs_jax = f"{r}" + (f" ({'met' if r.median <= JAX_TARGET else 'MISSED'})"
                               if t == 1 else "")
        if npy is not None:
            r = paired_ratio(npy, mine)
            vs_np = f"{r} ({'met' if r.median >= TARGET else 'MISSED'})"
        rows.append([t, _ms(mine), _ms(jx), vs_jax, _ms(npy), vs_np])
    text = table(["threads", "mlcbook ms/step", "JAX ms/step",
                  f"mlcbook / JAX (target ≤ {JAX_TARGET}x at 1 thread)", "numpy ms/step",
                  f"numpy / mlcbook (target {TARGET}x)"], rows)
    lines = []
    for who in ("mlcbook", "jax"):
        if (who, 1) in by and (who, 2) in by:
            r = paired_ratio(by[(who, 1)], by[(who, 2)])
            met = "met" if r.median >= SPEEDUP_TARGET else "MISSED"
            goal = f" (target ≥ {SPEEDUP_TARGET}x: {met})" if who == "mlcbook" else ""
            lines.append(f"{'JAX' if who == 'jax' else who}'s 2-thread speedup (1-thread time / "
                         f"2-thread time): {r}{goal}.")
    lines.append(f"mlcbook: {info['calls']} kernel calls per step; compiled in "
                 f"{info['compile_s']:.1f} s.")
    if info["jax"]:
        j = next(iter(info["jax"].values()))
        pins = ", ".join(f"{t} thread{'s' * (t > 1)} on cores {c.cores} ({c.os_threads} OS "
                         f"threads)" for t, c in info["jax"].items())
        lines.append(f"JAX {j.version}, one child process per thread count: {pins}; losses "
                     f"of the first {CHECKED_STEPS} steps within {info['jax_diff']:.1e} "
                     "(relative) of mlcbook's.")
    return text + "\n\n" + "\n".join(lines)


def describe(kind: str) -> str:
    if kind == "mlp":
        return f"MLP {'-'.join(map(str, SIZES))}"
    return "CNN (`mb.train.cnn`: 1x8x8 -> conv 16 -> conv 32 -> max pool -> 10)"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--no-jax", action="store_true", help="do not time the JAX step")
    ap.add_argument("--jax-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_train.md")))
    args = ap.parse_args(argv)
    if args.jax_worker:
        _worker()
        return
    missing = "--no-jax was given" if args.no_jax else jax_missing()
    if missing:
        print(f"Note: {missing}.")
    import mlcbook as mb
    load = mb.runtime.machine_load()
    if load.busy:
        print(f"Note: the machine is busy ({load}): the figures, the 2-thread ones most, "
              "are rough.")
    sections = []
    for kind in args.models:
        cs, info = cases(kind, use_jax=missing is None)
        try:
            measure(cs, args.rounds, group=lambda c: c.group)
        finally:
            for j in info["jax"].values():
                j.close()
        for c in cs:     # a JAX measurement is one batch of steps
            if c.key == "jax":
                batch = info["jax"][c.threads].batch
                c.seconds[:] = [s / batch for s in c.seconds]
        sections.append(f"## {describe(kind)}, batch {BATCH}\n\n{report(kind, cs, info)}")
    title = "Training step: mlcbook vs JAX (XLA) and numpy"
    note = f"\n\nThe JAX columns are left out: {missing}." if missing else ""
    text = (f"Written by `python bench/train.py` ({args.rounds} rounds; each figure the median "
            f"over interleaved rounds, same thread count for all; ratios paired per round, "
            f"with their 95% intervals). Momentum SGD. At the start: {load}.{note}\n\n"
            + "\n\n".join(sections)
            + f"\n\nMachine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
