"""The ``mlcbook`` command (also ``python -m mlcbook``).

    mlcbook tour                        the built-in end-to-end demo
    mlcbook compile MODEL.onnx -o OUT.mlcb [--batch-size N] [--shape NAME=D1,D2,...]
    mlcbook compile MODEL.onnx -o OUT.mlcb --records RECORDS.jsonl   (tuned kernels)
    mlcbook tune MODEL.onnx --trials N -o RECORDS.jsonl [--cost-model xgboost|random|analytic]
                                                        [--warm-start N] [--scheduler ADDRESS]
    mlcbook export MODEL.onnx -o DIR [--name NAME] [--target T] [--cc CC] [--batch-size N] ...
    mlcbook run OUT.mlcb [--input [NAME=]X.npy ...] [--output Y.npy] [--repeat N] [--profile]
    mlcbook grade NOTEBOOK... [--json out.json] [--timeout S] [--isolate] [--seed N] [--jobs N]
    mlcbook grade STUDENT_DIR... --csv grades.csv [--json grades.json] [--jobs N]
    mlcbook book                        the table of contents, with each chapter's status
    mlcbook book run [--save]           execute every written chapter and solution notebook
    mlcbook book make-student [--check] regenerate the student exercise notebooks
    mlcbook book build -o SITE/         render the written chapters as a web book
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from . import cli_run
from .errors import MLCError
from .optional import progress, require


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except MLCError as err:
        print(f"mlcbook {args.command}: error: {err}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlcbook", description="A course in machine-learning compilation, and its compiler.")
    parser.add_argument("--version", action="version", version=f"mlcbook {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from . import tour as tour_module
    tour = sub.add_parser("tour", formatter_class=_Formatter, help="run the built-in end-to-end demo",
                          description="Run the built-in end-to-end demo: a small model from "
                          "ONNX to native code, then one kernel through the layers below.")
    tour_module.add_arguments(tour)
    tour.set_defaults(run=lambda args: tour_module.run(args, tour))

    comp = sub.add_parser("compile", formatter_class=_Formatter, help="compile an ONNX model to a deployable .mlcb file",
                          description="Import an ONNX model, compile it to native code with the "
                          "default schedules, and save the executable (object code, plan, "
                          "weights) for `mlcbook run`.")
    comp.add_argument("model", metavar="MODEL.onnx")
    comp.add_argument("-o", "--output", required=True, metavar="OUT.mlcb",
                      help="where to write the compiled model")
    _add_shape_arguments(comp)
    comp.add_argument("--records", metavar="RECORDS.jsonl",
                      help="tuning records (from `mlcbook tune`) to schedule the kernels with")
    comp.set_defaults(run=_compile)

    exp = sub.add_parser("export", formatter_class=_Formatter, help="compile an ONNX model to a C library and header",
                         description="Import an ONNX model, compile it, and write NAME.h, "
                         "libNAME.so and libNAME.a: the model as a C library that needs only "
                         "libc, libm and pthreads (no Python, numpy or LLVM).")
    exp.add_argument("model", metavar="MODEL.onnx")
    exp.add_argument("-o", "--output", required=True, metavar="DIR",
                     help="the folder to write the header and libraries to")
    exp.add_argument("--name", default="model",
                     help="the C name prefix: NAME_run, NAME.h (default: model)")
    exp.add_argument("--cc", default="cc", metavar="CC",
                     help="the C compiler that links the library; for another architecture's "
                     "target, that architecture's (e.g. aarch64-linux-gnu-gcc)")
    exp.add_argument("--target", default="llvm", metavar="T",
                     help="the target, e.g. 'llvm -mcpu=x86-64-v3' (default: this CPU)")
    _add_shape_arguments(exp)
    exp.set_defaults(run=_export)
    tn = sub.add_parser("tune", formatter_class=_Formatter, help="tune the kernels of an ONNX model, writing tuning records",
                        description="Measure schedules of every kernel of an ONNX model on this "
                        "machine, guided by a cost model, and append the records to a JSON-lines "
                        "file that `mlcbook compile --records` uses.")
    tn.add_argument("model", metavar="MODEL.onnx")
    tn.add_argument("-o", "--output", required=True, metavar="RECORDS.jsonl",
                    help="the records file (read first: tuning resumes from it)")
    tn.add_argument("--trials", type=int, required=True, metavar="N",
                    help="measurements in all, shared among the model's kernels")
    tn.add_argument("--cost-model", dest="cost_model", default="xgboost",
                    choices=["xgboost", "random", "analytic"], help="the cost model")
    tn.add_argument("--batch", type=int, default=8, help="candidates measured per round")
    tn.add_argument("--warm-start", dest="warm_start", type=int, default=32, metavar="N",
                    help="random points the cost model's prior ranks for each kernel's first "
                    "round (0: none)")
    tn.add_argument("--timeout", type=float, default=60.0,
                    help="seconds before a candidate is given up as hanging")
    tn.add_argument("--scheduler", metavar="ADDRESS",
                    help="measure on the Dask cluster of this scheduler (tcp://host:8786; the "
                    "tune-dask extra); a crashing or hanging candidate costs no worker")
    tn.add_argument("--one-per-host", dest="one_per_host", action="store_true",
                    help="with --scheduler: measure on one worker per host, so that no two "
                    "measurements share a machine")
    _add_shape_arguments(tn)
    tn.set_defaults(run=_tune)

    run = sub.add_parser("run", help="run a compiled model on inputs stored as .npy files",
                         description="Load a model written by `mlcbook compile`, run it on "
                         "inputs saved with numpy.save (random ones for inputs not given), and "
                         "print or save its outputs by name; --repeat times it, --profile "
                         "times each kernel.", formatter_class=_Formatter)
    cli_run.add_arguments(run)
    run.set_defaults(run=cli_run.run_command)

    grade = sub.add_parser("grade", formatter_class=_Formatter, help="execute exercise notebooks and print their scores",
                           description="Execute each notebook in a fresh kernel (every cell, "
                           "even after one raises), check each exercise's answer there with "
                           "freshly loaded graders, and print a score table (optionally as "
                           "JSON). Student code runs with your rights: grade untrusted "
                           "notebooks in a disposable container or account.")
    grade.add_argument("notebooks", nargs="+", metavar="SUBMISSION",
                       help="one student's notebooks (NN_topic.ipynb); or, for a gradebook, a "
                       "folder per student, a class folder of them, or a file per student "
                       "with --chapter")
    grade.add_argument("--json", metavar="PATH", help="also write the scores as JSON to PATH")
    grade.add_argument("--csv", metavar="PATH",
                       help="grade the submissions as a class and write the gradebook: a row "
                       "per student, a column per exercise, the total")
    grade.add_argument("--chapter", type=int, metavar="N",
                       help="the chapter of notebooks not named NN_topic.ipynb (a file per "
                       "student)")
    grade.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="notebooks graded at once, each in its own kernel (default: 1)")
    grade.add_argument("--seed", type=int, metavar="N",
                       help="draw the checks' cases from this seed (default: a fresh one, "
                       "printed and recorded in the JSON)")
    grade.add_argument("--timeout", type=float, default=120, metavar="S",
                       help="seconds one cell (or one exercise's check) may run before it "
                       "is interrupted (default: 120)")
    grade.add_argument("--isolate", action="store_true",
                       help="run the kernel under resource limits: 600 s of CPU time, 4 GiB "
                       "of memory, files up to 256 MiB (POSIX setrlimit)")
    grade.add_argument("--kernel", metavar="NAME",
                       help="a Jupyter kernel name (default: this Python environment)")
    grade.set_defaults(run=_grade)

    mach = sub.add_parser("machine", formatter_class=_Formatter, help="print the machine model schedules are derived from",
                          description="Print the machine model of a target (default: this "
                          "CPU): vector width and registers, FMA and load throughput, caches, "
                          "cores and dot-product instructions, from which the default schedules "
                          "and tuning spaces derive their choices.")
    mach.add_argument("--target", default="llvm", metavar="T",
                      help="an LLVM target, e.g. 'llvm -mcpu=znver3' (default: this machine)")
    mach.set_defaults(run=_machine)

    bk = sub.add_parser("book", formatter_class=_Formatter, help="list, run or maintain the book's chapters",
                        description="List the book's chapters (default), execute the written "
                        "ones, regenerate the student exercise notebooks, or render the written "
                        "chapters and their exercises as a web book.")
    bk.add_argument("action", nargs="?", choices=["list", "run", "make-student", "build"],
                    default="list")
    bk.add_argument("--run", dest="action", action="store_const", const="run",
                    help="same as the action 'run'")
    bk.add_argument("--save", action="store_true",
                    help="run: write the executed notebooks back, outputs included")
    bk.add_argument("--check", action="store_true",
                    help="make-student: only report notebooks that are out of date (exit 1)")
    bk.add_argument("--timeout", type=float, default=120, metavar="S",
                    help="run: seconds one cell may run (default: 120)")
    bk.add_argument("-o", "--output", metavar="SITE", default="site",
                    help="build: the folder to write the web book to (default: site)")
    bk.set_defaults(run=_book)
    return parser


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """--help shows each option's default, where it has one that its help does not say."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is None or action.default is False or action.default == [] \
                or "default" in text:
            return text
        return super()._get_help_string(action)


def _machine(args: argparse.Namespace) -> int:
    from .codegen.target import Target
    print(Target(args.target).machine)
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mlcbook")
    except PackageNotFoundError:
        return "(not installed)"


def _add_shape_arguments(parser: argparse.ArgumentParser) -> None:
    """--batch-size and --shape: the input shapes a compiled model is made for."""
    parser.add_argument("--batch-size", type=int, metavar="N",
                        help="the size of a symbolic first dimension of the inputs (compiled "
                        "files and tuned kernels have static shapes)")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D1,D2,...",
                        help="the full shape of one input (repeat for several inputs)")


def _import_onnx(args: argparse.Namespace):
    """The graph module of ``args.model`` at the static shapes ``--batch-size`` and
    ``--shape`` give; a DynamicShapeError naming the option to use for a symbolic dimension
    that neither fixes."""
    from .errors import ArgumentError, DynamicShapeError
    from .frontend import from_onnx
    from .frontend.onnx import load_model, symbolic_dims
    if args.batch_size is not None and args.batch_size < 1:
        raise ArgumentError(f"--batch-size must be at least 1, got {args.batch_size}")
    shapes = _parse_shapes(args.shape)
    model = load_model(args.model)
    inits = {i.name for i in model.graph.initializer}
    inputs = [vi.name for vi in model.graph.input if vi.name not in inits]
    for name in shapes:
        if name not in inputs:
            raise ArgumentError(f"--shape names {name!r}, which is not an input of the model; "
                                f"its inputs are: {', '.join(inputs) or 'none'}")
    for d in symbolic_dims(model, shapes):
        if d.axis == 0 and args.batch_size is not None:
            continue
        fix = "--batch-size N" if d.axis == 0 else \
            f"--shape {d.input}={','.join(str(n) if isinstance(n, int) else 'D' for n in d.dims)}"
        raise DynamicShapeError(f"input {d.input!r} has the symbolic dimension {d.name!r} at "
                                f"axis {d.axis} (shape {d.shape}); `mlcbook {args.command}` "
                                f"makes code for static shapes: pass {fix}")
    return from_onnx(model, shapes=shapes, batch_size=args.batch_size)


def _parse_shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    from .errors import ArgumentError
    shapes = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 0 for d in shape):
            raise ArgumentError(f"--shape {spec!r} is not NAME=D1,D2,... with non-negative "
                                "integers, e.g. --shape input=1,3,224,224")
        shapes[name] = shape
    return shapes


def _compile_onnx(args: argparse.Namespace, target: str = "llvm", records=None):
    from .graph import compile as compile_model
    return compile_model(_import_onnx(args), target=target, tuning_records=records)


def _export(args: argparse.Namespace) -> int:
    import time
    from .errors import ExportError
    from .paths import output_folder
    t0 = time.perf_counter()
    output_folder(args.output, "the C library", ExportError, create=False)  # before compiling
    exe = _compile_onnx(args, target=args.target)
    lib = exe.export(args.output, name=args.name, cc=args.cc)
    print(f"exported {args.model} in {time.perf_counter() - t0:.2f} s for {args.target}:")
    src = lib.folder / "src"
    for path in (lib.header, lib.shared, lib.static, src, lib.folder / "SHA256SUMS"):
        if path is not None:
            print(f"  {path}")
    if lib.shared is None:
        # the compiler makes code for another architecture: say how to finish the build
        print(f"{args.cc!r} cannot link code for {args.target}, so no library was built; "
              f"build them with that architecture's C compiler, e.g. again with --cc "
              f"aarch64-linux-gnu-gcc, or by hand in {src}:\n"
              f"  CC -O2 -fPIC -std=c11 -I {lib.folder} -c {args.name}_runtime.c\n"
              f"  CC -shared -o lib{args.name}.so {args.name}_runtime.o kernels.o "
              f"-Wl,--version-script={args.name}.map -lm -lpthread")
        return 0
    print(f"call {args.name}_run(inputs, outputs) from C; link with -L{args.output} "
          f"-l{args.name}")
    return 0


def _compile(args: argparse.Namespace) -> int:
    import time

    from .errors import ArgumentError, ArtifactError
    from .paths import output_file
    t0 = time.perf_counter()
    output_file(args.output, "the compiled model", ArtifactError)  # before compiling
    exe = _compile_onnx(args, records=args.records)
    try:
        exe.save(args.output)
    except OSError as err:
        raise ArgumentError(f"cannot write {args.output!r}: {err.strerror or err}; check that "
                            "its folder exists and is writable") from None
    seconds = time.perf_counter() - t0
    plan = exe.plan
    ins = ", ".join(f"{n} {t.shape} {t.dtype}" for n, t in plan.inputs)
    outs = ", ".join(f"{plan.slots[o].shape} {plan.slots[o].dtype}" for o in plan.outputs)
    print(f"compiled {args.model} in {seconds:.2f} s: {exe.stats['kernels']} kernels, "
          f"{exe.stats['calls']} kernel calls per run")
    print(f"  inputs:  {ins}\n  outputs: {outs}")
    print(f"wrote {args.output} ({Path(args.output).stat().st_size / 1024:.0f} KB, sha256 "
          f"{exe.artifact_sha256}); run it with `mlcbook run {args.output} --input X.npy`")
    return 0


def _tune(args: argparse.Namespace) -> int:
    import time

    from .errors import ArgumentError, DatabaseError
    from .paths import output_file
    from .tune.report import report, tasks_by_share, why_untuned
    from .tune.tasks import tune_model
    if args.trials < 1:
        raise ArgumentError(f"--trials must be at least 1, got {args.trials}")
    # the tune extra, checked before minutes of importing and profiling
    require("tqdm", "`mlcbook tune`")
    if args.cost_model == "xgboost":
        require("xgboost", "`mlcbook tune --cost-model xgboost`")
    output_file(args.output, "the tuning records", DatabaseError)  # before any tuning
    t0 = time.perf_counter()
    mod = _import_onnx(args)
    executor = None
    if args.scheduler:
        from .tune.cluster import DaskExecutor
        executor = DaskExecutor(args.scheduler, timeout=args.timeout,
                                one_per_host=args.one_per_host)
        print(f"measuring on the Dask cluster at {args.scheduler}: "
              f"{sum(map(len, executor.hosts.values()))} workers on {len(executor.hosts)} "
              f"host{'s' * (len(executor.hosts) != 1)}, CPU {executor.target}")
    # the biggest kernels first: the first rounds go to them, and the report lists them so
    tasks, shares = tasks_by_share(mod, target=getattr(executor, "target", None))
    print(f"{len(tasks)} kernels to tune, by their share of an untuned run: "
          + ", ".join(f"{t.name} {shares[t.name]:.0%}" for t in tasks))
    try:
        results = tune_model(mod, args.trials, database=args.output, model=args.cost_model,
                             batch=args.batch, timeout=args.timeout, warm_start=args.warm_start,
                             tasks=tasks, executor=executor)
    finally:
        if executor is not None:
            executor.shutdown()
    print(report(tasks, shares, results, trials=args.trials, batch=args.batch))
    tuned = sum(why_untuned(t, results.get(t.name), args.trials, args.batch, len(tasks)) is None
                for t in tasks)
    spent = sum(r.trials_run for r in results.values())
    print(f"tuned {tuned} of {len(tasks)} kernel{'s' * (len(tasks) != 1)} of {args.model} with "
          f"{spent} trial{'s' * (spent != 1)} in {time.perf_counter() - t0:.1f} s; records in "
          f"{args.output}; use them with `mlcbook compile {args.model} -o OUT.mlcb --records "
          f"{args.output}`")
    return 0


#: what `mlcbook grade` and `mlcbook book run` import: a Jupyter kernel and its client
_NOTEBOOK_RUNNER = ("nbformat", "nbclient", "jupyter_client", "ipykernel", "IPython", "traitlets")


def _grade(args: argparse.Namespace) -> int:
    for module in _NOTEBOOK_RUNNER:
        require(module, "`mlcbook grade`")
    from .errors import GradingError
    from .grading import grade, gradebook
    from .grading.execute import CURRENT_ENV
    from .paths import output_file
    # checked before grading: a bad path must not throw away an hour of grading
    for flag, path in (("--json", args.json), ("--csv", args.csv)):
        if path:
            output_file(path, f"the {flag[2:]} scores", GradingError)
    options = dict(timeout=args.timeout, kernel_name=args.kernel or CURRENT_ENV,
                   isolate=args.isolate, jobs=args.jobs)
    seed = grade.new_seed() if args.seed is None else args.seed
    as_class = args.csv or args.chapter is not None or any(Path(p).is_dir()
                                                          for p in args.notebooks)
    if not as_class:
        reports = grade.grade(args.notebooks, seed=seed, **options)
        print(grade.format_table(reports))
        data = grade.to_json(reports)
    else:
        subs = gradebook.submissions(args.notebooks, args.chapter)
        book = gradebook.grade_submissions(subs, seed=seed, chapter=args.chapter, **options)
        print(gradebook.format_book(book, seed))
        data = gradebook.to_json(book, seed)
        if args.csv:
            gradebook.write_csv(book, args.csv)
            print(f"gradebook written to {args.csv}")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"scores written to {args.json}")
    return 0


def _book(args: argparse.Namespace) -> int:
    from . import book
    loaded = book.load()
    if args.action == "list":
        print(loaded.title)
        print(textwrap.fill(loaded.scope, 92))
        for part in loaded.parts:
            print(f"\n{part.title}")
            print(textwrap.fill(f"Needs: {part.needs}", 92, initial_indent="  ",
                                subsequent_indent="  "))
            for ch in (c for c in loaded.chapters if c.part == part):
                print(f"  {ch.number:>2}. {ch.title:<36} {ch.status}")
        written = sum(c.written for c in loaded.chapters)
        print(f"\n{written} of {len(loaded.chapters)} chapters written; book.toml: {loaded.path}")
        return 0
    if args.action == "run":
        for module in _NOTEBOOK_RUNNER:
            require(module, "`mlcbook book run`")
        return _book_run(loaded, timeout=args.timeout, save=args.save)
    if args.action == "build":
        for module in ("nbformat", "markdown_it", "pygments", "latex2mathml"):
            require(module, "`mlcbook book build`")
        from .book_html import build
        pages = build(loaded, args.output)
        print(f"wrote {len(pages)} pages to {args.output}/; open {pages[0]} in a browser")
        return 0
    return _book_make_student(loaded, check=args.check)


def _book_run(loaded, *, timeout: float, save: bool) -> int:
    nbformat = require("nbformat", "`mlcbook book run`")

    from .grading.execute import execute_notebook
    paths = [p for c in loaded.chapters if c.written for p in (c.notebook, c.solutions)]
    failures = 0
    rows = []
    for path in progress(paths, desc="running the book", unit="notebook",
                         feature="`mlcbook book run`", extra="course"):
        run = execute_notebook(path, timeout=timeout)
        rows.append((path.relative_to(loaded.root), run.seconds, run.error))
        if run.error is not None:
            failures += 1
        elif save:
            nbformat.write(run.notebook, path)
    for rel, seconds, error in rows:
        print(f"  {seconds:6.1f} s  {rel}" + (f"  FAILED: {error}" if error else ""))
    print(f"{len(rows) - failures} of {len(rows)} notebooks ran cleanly")
    return 1 if failures else 0


def _book_make_student(loaded, *, check: bool) -> int:
    require("nbformat", "`mlcbook book make-student`")
    from .grading.make_student import make_student
    stale = []
    for ch in loaded.chapters:
        if not ch.solutions.is_file():
            continue
        if not make_student(ch.solutions, ch.exercises, check=check):
            stale.append(ch.exercises.relative_to(loaded.root))
    verb = "out of date" if check else "written"
    for rel in stale:
        print(f"{verb}: {rel}")
    if not stale:
        print("student notebooks are in sync with their solutions")
    return 1 if (check and stale) else 0
