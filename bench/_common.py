"""Shared by the benchmarks: cases measured in interleaved rounds, markdown tables.

The machine is shared, so its load changes during a run. To keep that from favouring one
program over another, every case (a program at a thread count) is measured once per
*round*, rounds repeat, and each figure is the median over rounds: a busy moment costs all
programs alike. Thread counts are set in-process for both sides — numpy's BLAS through
threadpoolctl, mlcbook's pool with ``mb.runtime.num_threads``.

After a multi-threaded case the harness pauses (``SETTLE`` seconds): OpenBLAS's worker
threads keep spinning for about 0.1 s after each call, and would otherwise take a core
from whatever is measured next (measured here: a 2-thread kernel right after a 2-thread
numpy matmul ran 1.6x slower for ~0.1 s).

The host's speed also drifts in phases of about half a second (the same ResNet call takes
43 ms, then 55 ms, then 43 ms again; onnxruntime's alike), longer than a round of a big
benchmark. So a ratio is taken *per round* between two cases measured next to each other
(``measure(..., group=)`` interleaves only the cases of one group), and the figure is the
median of those paired ratios with a 95% interval (``paired_ratio``): a slow phase then
slows both sides of a pair instead of one side of the comparison.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import platform
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import mlcbook as mb

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError as e:  # pragma: no cover - the message is the point
    raise SystemExit("the benchmarks need threadpoolctl to pin numpy's threads: "
                     "pip install -e '.[bench]'") from e


#: seconds to pause after a multi-threaded case (see the module docstring)
SETTLE = 0.15


@dataclass
class Case:
    """One program at one thread count; ``fn()`` runs it once on prepared arguments."""

    group: str
    key: tuple
    threads: int
    fn: Callable[[], None]
    once: bool = False            # too slow to repeat: measured in one run only
    check: object = None          # (result, reference) to compare after a `once` run
    seconds: list = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def kernel_call(kernel, *args) -> Callable[[], None]:
    """A zero-argument call of ``kernel`` whose arguments were checked once."""
    ptrs = kernel.check_args(args)

    def call(arrays=args):  # the default keeps the arrays (and so the pointers) alive
        kernel.run_unchecked(ptrs)
    return call


class _Threads:
    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        self._blas = threadpool_limits(limits=self.n, user_api="blas")
        self._old = mb.runtime.set_num_threads(self.n)

    def __exit__(self, *exc):
        mb.runtime.set_num_threads(self._old)
        self._blas.restore_original_limits()


def measure(cases: list[Case], rounds: int, min_seconds: float = 0.03,
            group: Callable[[Case], object] | None = None) -> None:
    """Fill ``case.seconds`` with ``rounds`` interleaved measurements
    (``mb.runtime.time_interleaved``: warm-up, untimed calls before each timed batch, order
    rotated per round), each case at its own thread counts. Cases marked ``once`` are called
    once. With ``group`` (a function of a case), only the cases of one group are interleaved
    with each other, group after group, so that the cases to be compared (``paired_ratio``)
    run next to each other in every round."""
    repeated = {}
    for c in cases:
        if c.once:
            with _Threads(c.threads):
                t0 = time.perf_counter()
                c.fn()
                c.seconds.append(time.perf_counter() - t0)
        else:
            key = group(c) if group is not None else None
            repeated.setdefault(key, []).append(c)
    for members in repeated.values():
        _interleave(members, rounds, min_seconds)


def _interleave(cases: list[Case], rounds: int, min_seconds: float) -> None:
    named = {str(k): c for k, c in enumerate(cases)}

    @contextlib.contextmanager
    def threads_of(name):
        c = named[name]
        with _Threads(c.threads):
            yield
        if c.threads > 1:
            time.sleep(SETTLE)

    results = mb.runtime.time_interleaved({name: c.fn for name, c in named.items()},
                                          rounds=rounds, min_seconds=min_seconds,
                                          around=threads_of)
    for name, c in named.items():
        c.seconds.extend(results[name].results)


@dataclass(frozen=True)
class Ratio:
    """The median over rounds of ``a``'s time / ``b``'s time in the same round, and a 95%
    confidence interval of that median (``low``, ``high``; distribution-free, from the order
    statistics of the per-round ratios)."""

    median: float
    low: float
    high: float
    rounds: int

    def __str__(self) -> str:
        return f"{self.median:.2f}x [{self.low:.2f}, {self.high:.2f}]"


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """A ``level`` confidence interval of the median of ``values``: the order statistics
    ``k`` and ``n + 1 - k`` with ``k`` from the binomial(n, 1/2) quantile (normal
    approximation; for n < 6 it is the whole range).

        >>> median_interval(list(range(1, 21)))
        (6, 15)
    """
    v = sorted(values)
    n = len(v)
    z = statistics.NormalDist().inv_cdf(0.5 + level / 2)
    k = max(1, math.floor((n + 1) / 2 - z * math.sqrt(n) / 2))
    return v[k - 1], v[n - k]


def paired_ratio(a: Case, b: Case) -> Ratio:
    """``a`` over ``b``, round by round (both measured in the same rounds, see ``measure``)."""
    if len(a.seconds) != len(b.seconds):
        raise ValueError(f"{a.key} and {b.key} were measured in different rounds "
                         f"({len(a.seconds)} vs {len(b.seconds)})")
    ratios = [x / y for x, y in zip(a.seconds, b.seconds)]
    low, high = median_interval(ratios)
    return Ratio(statistics.median(ratios), low, high, len(ratios))


def compiled_with(model, **options):
    """``mb.compile`` of the ONNX ``model`` with compile ``options`` (see
    ``mlcbook.graph.passes.OPTIONS``), to compare a compiler choice with its alternative in
    one process: ``compiled_with(m, concat_in_place=False)``."""
    return mb.compile(mb.from_onnx(model), options=options)


#: the target of the AVX2 code a laptop runs (every x86 CPU since Haswell and Zen 1): on an
#: AVX-512 host, bench/e2e.py, convs.py and zoo.py also time the programs built for it
AVX2_TARGET = "llvm -mcpu=x86-64-v3"


def has_avx512() -> bool:
    """Whether this host's vectors are 512-bit (then the AVX2 code is worth timing beside)."""
    return mb.Target().vector_bits == 512


def add_avx2_argument(ap, what: str) -> None:
    """``--no-avx2``: on an AVX-512 host, skip timing the ``what`` compiled for x86-64-v3."""
    ap.add_argument("--no-avx2", action="store_true",
                    help=f"on an AVX-512 host, do not also measure the {what} compiled for "
                    "-mcpu=x86-64-v3 (AVX2)")


def ort_session(model, threads: int | None = None, quiet: bool = False):
    """An onnxruntime CPU session of the ONNX ``model`` (a ModelProto) that runs each node on
    ``threads`` threads (default: onnxruntime's choice) and never runs two nodes at once, the
    way mlcbook's executables run; ``quiet`` hides its warnings (e.g. unused initializers)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    if quiet:
        opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def blas_name() -> str:
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not info:
        return "unknown BLAS"
    i = info[0]
    return f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} kernels)"


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``'s "model name", else the platform's), or ""."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "cpu model"):
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor().strip()


def host_cpu() -> str:
    """This machine's key in a results file: LLVM's name for the host CPU and the CPU's model
    name, ``"znver5 / AMD EPYC 9B45"`` (see :func:`merge_results`)."""
    import llvmlite.binding as llvm
    model = cpu_model().replace(" / ", " ").replace("-->", "")
    return f"{llvm.get_host_cpu_name()} / {model}" if model else llvm.get_host_cpu_name()


#: below this, two threads did so much less than twice one thread's work that a figure at 2
#: threads says more about the host than about the programs (on a shared Zen 5 the second
#: vCPU ran slow for minutes at a time: 1.0x, where it gives 1.9x or more when well)
TWO_THREADS_LEAST = 1.7


def two_thread_scaling(calls: int = 300, repeats: int = 5) -> float:
    """How much more work two threads did than one in the same time on this host now: two
    Python threads each running ``calls`` 96x96 numpy matmuls (BLAS pinned to one thread;
    the GIL is released inside them) against one thread running ``calls``; the best of
    ``repeats`` tries, after a pause for the threads of what ran before (BLAS's, a
    runtime's) to stop spinning. About 2 on two healthy cores."""
    import threading

    import numpy as np
    a = np.random.default_rng(0).standard_normal((96, 96))

    def work():
        for _ in range(calls):
            a @ a

    def timed(threads: int) -> float:
        ts = [threading.Thread(target=work) for _ in range(threads)]
        t0 = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return time.perf_counter() - t0

    time.sleep(SETTLE)
    with threadpool_limits(limits=1, user_api="blas"):
        work()
        return max(2 * timed(1) / timed(2) for _ in range(repeats))


def machine() -> str:
    """The machine a run measured, for under its tables: a line (CPU, cores, numpy's BLAS,
    the load, the date, how two threads scaled then; it ends in a full stop) and then, as a
    fenced block, the machine model the schedules derive their choices from
    (``mb.Target().machine``: vector width, registers, FMA, caches, cores, dot-product
    instructions)."""
    import llvmlite.binding as llvm
    import numpy as np
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    model = cpu_model()
    scaling = two_thread_scaling()
    line = (f"{platform.machine()} `{llvm.get_host_cpu_name()}`"
            f"{f' ({model})' if model else ''}, {os.cpu_count()} cores, "
            f"{platform.system()}, Python {platform.python_version()}, numpy {np.__version__} "
            f"with {blas_name()}, load average {load:.1f} (1 min) at the end, "
            f"{datetime.date.today().isoformat()}; two threads then did {scaling:.2f}x one "
            f"thread's work in the same time (numpy matmuls)" + (
                "" if scaling >= TWO_THREADS_LEAST else
                f", under {TWO_THREADS_LEAST}x: the 2-thread figures above say more about the "
                "host's second core than about the programs; re-run them") + ".")
    return f"{line}\n\n```text\n{mb.Target().machine}\n```"


# --- results files: one section per CPU ------------------------------------------------------

#: the line that opens a CPU's section of a results file (its key: :func:`host_cpu`)
_SECTION = re.compile(r"^<!-- cpu: (.*?) -->[ \t]*$", re.M)
#: the CPU in the machine line of a results file written before there were sections:
#: "x86_64 `znver3`, 2 cores, ..."
_LEGACY_CPU = re.compile(r"`([\w.+-]+)`(?: \([^\n]*?\))?, \d+ cores")


def _same_cpu(a: str, b: str) -> bool:
    """Keys of one CPU: the same LLVM name, and the same model name unless one is unknown
    (a section from before model names were recorded)."""
    (na, _, ma), (nb, _, mb_) = a.partition(" / "), b.partition(" / ")
    return na == nb and (ma == mb_ or not ma or not mb_)


def _demote(body: str) -> str:
    """``body`` with each markdown heading one level down (# -> ##) outside fenced blocks, so
    that it sits inside a CPU's section."""
    out, fenced = [], False
    for line in body.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _section(cpu: str, body: str, note: str = "") -> str:
    name, _, model = cpu.partition(" / ")
    heading = f"## {'unknown CPU' if name == 'unknown' else name}" \
        + (f" ({model})" if model else "") + note
    return f"<!-- cpu: {cpu} -->\n{heading}\n\n{_demote(body.strip())}\n"


def results_sections(text: str) -> list[tuple[str, str]]:
    """The sections of a results file: ``[(cpu key, section text)]`` in file order. A file
    written before there were sections is one section, keyed by the CPU its machine line
    names ("unknown" if none), its title dropped and its headings one level down."""
    marks = list(_SECTION.finditer(text))
    if not marks:
        body = text.strip()
        if not body:
            return []
        if body.startswith("# "):
            body = body.partition("\n")[2]
        found = _LEGACY_CPU.search(body)
        cpu = found.group(1) if found else "unknown"
        return [(cpu, _section(cpu, body, " (an earlier run)"))]
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [(m.group(1), text[m.start():end].strip() + "\n") for m, end in zip(marks, ends)]


def merge_results(old: str, title: str, body: str, cpu: str) -> str:
    """The results file ``old`` (its text, "" if none) with this run's ``body`` as the section
    of CPU ``cpu`` (a :func:`host_cpu` key): that CPU's section is replaced where it was, the
    other CPUs' sections are kept, and a CPU new to the file gets a section at the end. The
    title (``# title``) and the note under it are written anew."""
    new = _section(cpu, body)
    sections, placed = [], False
    for key, text in results_sections(old):
        if not _same_cpu(key, cpu):
            sections.append(text)
        elif not placed:
            sections.append(new)
            placed = True
    if not placed:
        sections.append(new)
    head = (f"# {title}\n\nOne section per CPU the benchmark ran on: compare figures within a "
            "section only. A run replaces the section of its CPU and keeps the others "
            "(`bench/_common.write_results`).\n")
    return "\n".join([head, *sections])


def write_results(path, title: str, body: str) -> Path:
    """Write this run's ``body`` (markdown; its machine line included) as this CPU's section
    of the results file ``path`` under ``# title``, keeping the other CPUs' sections already
    there (:func:`merge_results`); returns the path."""
    path = Path(path)
    old = path.read_text() if path.exists() else ""
    path.write_text(merge_results(old, title, body, host_cpu()))
    return path


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if k == 0 else "---:" for k in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def by_key(cases: list[Case]) -> dict:
    return {(c.key, c.threads): c for c in cases}
