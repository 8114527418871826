"""``mlcbook tour``: the built-in end-to-end demo, every layer of the compiler in one run.

Part 1 takes a whole model: the small convolutional network shipped inside the package
(:func:`mlcbook.models.tiny_convnet`, an ONNX model built with ``onnx.helper``). It imports
it into the graph IR, shows the graph, legalizes every op to loop IR, compiles the kernels
through LLVM into an executable, runs it, checks it against the reference evaluator, and
prints a table: ops, kernels, compile time, and latency beside the numpy reference evaluator.

Part 2 follows one kernel through the layers below: ``relu(A @ B)`` as a tensor expression,
its loop IR checked by the interpreter, a schedule recorded as a trace, and native code
timed beside numpy.

    $ mlcbook tour
    $ mlcbook tour --batch-size 32 --save demo/     # also write the model and an input batch
"""

from __future__ import annotations

import argparse
import collections
import os
import tempfile
import time

import numpy as np


def _say(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 72 - len(title)))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds < 0.01 else f"{seconds * 1e3:.1f} ms"


# --- part 1: a whole model ------------------------------------------------------------------------
def _model_part(batch: int, repeat: int, save_dir: str | None) -> int:
    from . import compile as mb_compile
    from . import from_onnx, graph, load, models, time_kernel
    from .graph import CallTIR, post_order
    from .ops import view_ops

    _say("1. a model: mb.models.tiny_convnet(), built with onnx.helper")
    model = models.tiny_convnet()
    op_types = collections.Counter(n.op_type for n in model.graph.node)
    n_weights = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"{len(model.graph.node)} ONNX nodes: "
          + ", ".join(f"{k} x{v}" if v > 1 else k for k, v in op_types.items()))
    print(f"{len(model.graph.initializer)} initializers holding {n_weights:,} weights "
          "(fixed random values, not trained; the compiler reads them only to fold constants, "
          "such as a BatchNorm into the conv before it)")
    shape = ", ".join(map(str, models.INPUT_SHAPE))
    print(f"input {models.INPUT_NAME!r} of shape ({shape}); the batch size N is symbolic")

    _say(f"2. import: mb.from_onnx(model, batch_size={batch}) -> graph IR")
    t0 = time.perf_counter()
    mod = from_onnx(model, batch_size=batch)
    import_s = time.perf_counter() - t0
    main = mod["main"]
    print(main)
    print(f"\nEvery weight is a named parameter W[...] owned by the op call that uses it: "
          f"{len(main.weights)} parameters, {len(main.calls())} op calls.")

    _say("3. legalize: each op call becomes call_tir of a loop-IR PrimFunc")
    # as mb.compile does it: ops that only reinterpret memory stay, to become views
    legal = graph.legalize(mod, keep=view_ops())
    lmain = legal["main"]
    for line in str(lmain).splitlines():
        if " = " in line:
            name, rhs = line.split(" = ", 1)
            print(f"{name.split(':')[0].strip()} = {rhs}")
    relu_call = next(n for n in post_order(lmain.body)
                     if isinstance(n, CallTIR) and n.name == "relu3")
    print(f"\nthe PrimFunc {relu_call.func!r} that the call 'relu3' runs:")
    print(legal[relu_call.func])

    print("\nmb.compile legalizes the optimized graph instead: folding passes first, then the "
          "calls grouped by op kind, one PrimFunc per group (mb.graph.explain_fusion):")
    print(graph.explain_fusion(graph.passes.optimize(mod)))

    _say("4. compile: default schedules, then LLVM -> one native library")
    t0 = time.perf_counter()
    exe = mb_compile(mod, target="llvm")
    compile_s = time.perf_counter() - t0
    stats = exe.stats
    print(exe)
    print(f"compiled in {compile_s:.2f} s (legalize + schedule {stats['schedule_s']:.2f} s, "
          f"LLVM {stats['build_s']:.2f} s)")

    _say("5. run, and check against the reference evaluator (numpy)")
    x = models.sample_input(batch)
    y = exe(x)
    ref = graph.interpret(mod, x)
    err = float(np.abs(y - ref).max())
    ok = bool(np.allclose(y, ref, rtol=1e-4, atol=1e-5))
    print(f"exe(x) -> {y.shape} {y.dtype}; rows sum to 1 (softmax): "
          f"{bool(np.allclose(y.sum(axis=1), 1, atol=1e-5))}")
    print(f"max |exe(x) - mb.graph.interpret(mod, x)| = {err:.1e}  {'ok' if ok else 'MISMATCH'}")
    if not ok:
        return 1
    with tempfile.TemporaryDirectory() as d:
        path = exe.save(os.path.join(d, "tiny_convnet.mlcb"))
        size_kb = os.path.getsize(path) / 1024
        same = bool(np.array_equal(load(path)(x), y))
    print(f"exe.save(...) writes a {size_kb:.0f} KB artifact (object code, plan, weights); "
          f"mb.load(...) of it gives the same output: {same}")
    if not same:
        return 1

    t_exe = time_kernel(lambda: exe(x), number=10, repeat=repeat).median
    t_ref = time_kernel(lambda: graph.interpret(mod, x), number=1,
                        repeat=max(1, min(repeat, 5))).median
    op_calls = collections.Counter(c.op for c in main.calls())
    views = sorted({c.op for c in main.calls() if c.op in view_ops()})
    no_kernel = f" ({', '.join(views)}: a view of its input, no kernel)" if views else ""

    _say("6. summary")
    rows = [
        ("model", f"tiny_convnet, batch {batch}, {n_weights:,} weights"),
        ("ops", f"{sum(op_calls.values())} calls of {len(op_calls)} ops ("
         + ", ".join(f"{k} x{v}" if v > 1 else k for k, v in op_calls.items()) + ")"),
        ("kernels", f"{stats['kernels']} PrimFuncs, {stats['calls']} kernel calls per run"
         + no_kernel + "; fusion merged the rest"),
        ("memory", f"{stats['arena_bytes'] / 1024:.0f} KiB arena for the intermediates "
         f"({stats['unplanned_bytes'] / 1024:.0f} KiB with a buffer each)"),
        ("import", f"{import_s:.2f} s"),
        ("compile", f"{compile_s:.2f} s"),
        ("latency", f"{_ms(t_exe)} compiled vs {_ms(t_ref)} numpy reference evaluator "
         f"({t_ref / t_exe:.0f}x faster)"),
        ("max |error|", f"{err:.1e} vs the reference evaluator"),
    ]
    for label, value in rows:
        print(f"{label:12s} {value}")
    print("\n(latency: median of repeats on this machine, now, with the default schedules; "
          "chapter 7 tunes them.)")

    if save_dir is not None:
        os.makedirs(save_dir, exist_ok=True)
        onnx_path = models.save_tiny_convnet(os.path.join(save_dir, "tiny_convnet.onnx"))
        npy_path = os.path.join(save_dir, "image.npy")
        np.save(npy_path, x)
        mlcb = os.path.join(save_dir, "tiny_convnet.mlcb")
        print(f"\nwrote {onnx_path} and {npy_path}; the same from a shell:\n"
              f"  mlcbook compile {onnx_path} -o {mlcb} --batch-size {batch}\n"
              f"  mlcbook run {mlcb} --input {npy_path} --output "
              f"{os.path.join(save_dir, 'probs.npy')}")
    return 0


# --- part 2: one kernel, layer by layer -----------------------------------------------------------
def _mm_relu(n: int):
    from . import te
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    C = te.ops.matmul(A, B)
    D = te.ops.relu(C)
    return te.create_prim_func([A, B, D], name="mm_relu")


def _schedule(func, tile: int):
    from .schedule import Schedule
    sch = Schedule(func)
    mm = sch.get_block("matmul")
    i, j, k = sch.get_loops(mm)
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, tile])
    sch.reorder(io, jo, k, ii, ji)
    sch.vectorize(ji)
    sch.parallel(io)
    relu = sch.get_block("relu")
    r0, r1 = sch.get_loops(relu)
    r1o, r1i = sch.split(r1, factors=[None, tile])
    sch.vectorize(r1i)
    sch.parallel(r0)
    return sch


def _kernel_part(n: int, repeat: int) -> int:
    from . import build, time_kernel, tir

    _say("7. the abstraction: relu(A @ B) as a tensor expression, lowered to loop IR")
    small = _mm_relu(16)
    print(small)

    _say("8. its meaning: the reference interpreter agrees with numpy (16 x 16)")
    rng = np.random.default_rng(0)
    a16, b16 = rng.standard_normal((2, 16, 16), dtype=np.float32)
    out16 = np.zeros((16, 16), np.float32)
    tir.interpret(small, a16, b16, out16)
    err = float(np.abs(out16 - np.maximum(a16 @ b16, 0)).max())
    print(f"max |interpreter - numpy| = {err:.2e}")
    if err > 1e-4:
        print("MISMATCH: the interpreter disagrees with numpy")
        return 1

    _say(f"9. an implementation: a schedule for n = {n}, recorded as a trace")
    func = _mm_relu(n)
    sch = _schedule(func, tile=16)
    print(sch.trace)

    _say("10. native code through LLVM, checked against numpy")
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    expected = np.maximum(a @ b, 0)
    rows = []
    for label, prog in (("naive loop nest", func), ("scheduled", sch.mod)):
        t0 = time.perf_counter()
        kernel = build(prog)
        compile_s = time.perf_counter() - t0
        out = np.zeros((n, n), np.float32)
        kernel(a, b, out)
        err = float(np.abs(out - expected).max() / max(1.0, np.abs(expected).max()))
        ok = err < 1e-4
        print(f"{label:16s} compiled in {compile_s * 1e3:6.1f} ms; relative error {err:.1e} "
              f"{'ok' if ok else 'MISMATCH'}")
        if not ok:
            return 1
        number = 1 if label.startswith("naive") else 3
        t = time_kernel(kernel, a, b, out, number=number, repeat=repeat)
        rows.append((label, t.median))
    rows.append(("numpy (a @ b, max)",
                 time_kernel(lambda: np.maximum(a @ b, 0), number=1, repeat=repeat).median))

    _say("11. speed (median of repeats, this machine, now)")
    flops = 2.0 * n ** 3
    base = rows[-1][1]
    print(f"{'program':22s} {'time':>10s} {'GFLOP/s':>9s} {'vs numpy':>9s}")
    for label, secs in rows:
        print(f"{label:22s} {secs * 1e3:8.2f} ms {flops / secs / 1e9:9.2f} {base / secs:8.2f}x")
    print("\n(vs numpy > 1 means faster than numpy. The scheduled version is the chapter-3 "
          "schedule; chapters 4 and 7 go further.)")
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The tour's options (shared by ``mlcbook tour`` and :func:`main`)."""
    parser.add_argument("--batch-size", type=int, default=8,
                        help="batch size the model is compiled for (default: 8)")
    parser.add_argument("--size", type=int, default=512,
                        help="part 2: matrix size n of relu(A @ B), n x n (default: 512)")
    parser.add_argument("--repeat", type=int, default=5,
                        help="timing repeats; the median is shown (default: 5)")
    parser.add_argument("--model-only", action="store_true", help="run part 1 only")
    parser.add_argument("--save", metavar="DIR",
                        help="also write the model (.onnx) and its input batch (.npy) to DIR, "
                        "for `mlcbook compile` and `mlcbook run`")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the tour with parsed options; bad values exit through ``parser.error``."""
    if args.batch_size < 1:
        parser.error(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.size < 16 or args.size % 16:
        parser.error(f"--size must be a multiple of 16 and at least 16, got {args.size}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")

    print("mlcbook tour. Part 1: a whole model, from ONNX to native code")
    status = _model_part(args.batch_size, args.repeat, args.save)
    if status or args.model_only:
        return status
    print("\nPart 2: one kernel, through the layers below the graph")
    return _kernel_part(args.size, args.repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mlcbook tour", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv), parser)


if __name__ == "__main__":
    raise SystemExit(main())
