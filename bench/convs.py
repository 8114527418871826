"""Convolutions of ResNet/Inception/ShuffleNet shapes (batch 1): GFLOP/s of the conv kernels
``mb.compile`` makes (default schedules), beside onnxruntime's Conv, at 1 and 2 threads.

    python bench/convs.py                  # writes this CPU's section of bench/RESULTS_convs.md
    python bench/convs.py --rounds 1 --shapes groups,depthwise --out /tmp/convs.md   # smoke

Each mlcbook column is a one-conv graph compiled by ``mb.compile`` for this machine, timed
through the kernels the compiler made for the conv, without the layout changes at the graph's
edges (``to_blocked``, ``from_blocked``: in a network they sit at its ends), data already in
the kernel's layout, weights packed at compile time, as in a compiled model:

* NCHW: ``opt_level=2``, the conv in NCHW;
* blocked, direct: ``opt_level=3`` with Winograd off (option ``winograd_min_flops=inf``): the
  ``conv_nchwc`` that ``convert_layout`` makes (NCHW[b]c, blocks from
  ``rules.tile_size.channel_block``; a grouped conv in per-group blocks, each group's channels
  padded to whole blocks; a grouped 1x1 conv whose groups would be padded is a batched matmul
  in NCHW instead). Depthwise convs stay NCHW in the compiler: that column then says so;
* Winograd: ``opt_level=3`` with every 3x3 stride-1 conv by Winograd's F(2x2, 3x3) (its three
  kernels in NCHW16c);
* "mb.compile runs": which of these ``mb.compile`` picks for the shape (Winograd for big 3x3
  stride-1 convs, the option ``winograd_min_flops``), with the blocks;
* AVX2 code (on an AVX-512 host, unless ``--no-avx2``): ``mb.compile``'s choice for
  ``-mcpu=x86-64-v3``, the AVX2 code a laptop runs, measured in the same rounds.

onnxruntime's figures are a one-node model's ``run``, which includes its own layout changes.
GFLOP/s counts 2 * N*K*OH*OW*C/groups*KH*KW, the direct conv's useful work, for Winograd too
(its "effective" rate: it does 2.25x fewer products) and for padded groups (whose padding is
work the kernel does on top).
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

import numpy as np

from _common import (AVX2_TARGET, add_avx2_argument, by_key, Case, has_avx512, kernel_call,
                     machine, measure, ort_session, paired_ratio, table,
                     write_results)

import mlcbook as mb
from mlcbook.graph.compile import kernel_calls
from mlcbook.ops.types import TensorType

#: (label, C, K, H, kernel, stride, groups): batch 1, square maps, padding kernel // 2
SHAPES = [
    ("stem 7x7/2 3->64 @224", 3, 64, 224, 7, 2, 1),
    ("3x3 64->64 @56", 64, 64, 56, 3, 1, 1),
    ("3x3 128->128 @28", 128, 128, 28, 3, 1, 1),
    ("3x3 256->256 @14", 256, 256, 14, 3, 1, 1),
    ("3x3 512->512 @7", 512, 512, 7, 3, 1, 1),
    # the stride-2 3x3 convs that open ResNet-18's stages 2-4
    ("3x3/2 64->128 @56", 64, 128, 56, 3, 2, 1),
    ("3x3/2 128->256 @28", 128, 256, 28, 3, 2, 1),
    ("3x3/2 256->512 @14", 256, 512, 14, 3, 2, 1),
    ("1x1 64->256 @56", 64, 256, 56, 1, 1, 1),
    ("1x1/2 256->512 @28", 256, 512, 28, 1, 2, 1),
    # ResNet-18's stage-4 shortcut: a 7x7 map out, like 3x3 512->512 @7
    ("1x1/2 256->512 @14", 256, 512, 14, 1, 2, 1),
    ("depthwise 3x3 64 @56", 64, 64, 56, 3, 1, 64),
    # shufflenet's grouped 1x1 convs (4 groups) of its three stages, most of its time in the
    # zoo: 34, 68 and 136 channels per group (blocks of 16 would pad them: batched matmuls)
    ("1x1 136->136 4 groups @28", 136, 136, 28, 1, 1, 4),
    ("1x1 272->272 4 groups @14", 272, 272, 14, 1, 1, 4),
    ("1x1 544->544 4 groups @7", 544, 544, 7, 1, 1, 4),
]
THREADS = (1, 2)
#: the mlcbook contenders, in the table's order (AVX2 only on an AVX-512 host)
NCHW, BLOCKED, WINOGRAD, AVX2 = ("mlcbook NCHW", "mlcbook blocked", "mlcbook Winograd",
                                 "mlcbook AVX2 code")
#: the kernels at a one-conv graph's edges, not timed
LAYOUT_KERNELS = ("to_blocked", "from_blocked")
def _flops(c, k, h, kern, stride, groups) -> float:
    o = (h + 2 * (kern // 2) - kern) // stride + 1
    return 2.0 * k * o * o * (c // groups) * kern * kern


def _onnx(c, k, h, kern, stride, groups, w):
    from onnx import TensorProto, helper, numpy_helper
    p = kern // 2
    node = helper.make_node("Conv", ["input", "w"], ["y"], pads=[p] * 4, strides=[stride] * 2,
                            kernel_shape=[kern, kern], group=groups)
    o = (h + 2 * p - kern) // stride + 1
    g = helper.make_graph([node], "conv",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, c, h, h])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, k, o, o])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _graph(x_shape, w, attrs) -> "mb.graph.Function":
    """The one-conv graph: input ``x``, constant weights ``w``."""
    x = mb.graph.Var("x", TensorType(x_shape))
    return mb.graph.Function([x], mb.graph.op.conv(x, mb.graph.Constant(w), **attrs))


def _compiled(func, x, want, target=None, opt_level: int = 3, options=None):
    """``mb.compile(func)``'s conv kernels as one call (see the module docstring), and the
    steps of its plan ``[(kernel name, [slot shapes])]``. The plan runs once on buffers of
    its own (no shared arena, so that no timed kernel overwrites another's input), checked
    against ``want``; the timed call then runs only the kernels between the layout changes."""
    exe = mb.compile(func, target=target or "llvm", opt_level=opt_level, options=options)
    plan, consts = exe.plan, exe.constants
    buffers = {}
    for i, slot in enumerate(plan.slots):
        root = plan.root(i)
        if root != i:
            buffers[i] = buffers[root].reshape(slot.shape)
        elif slot.kind == "input":
            buffers[i] = x
        elif slot.kind == "const":
            buffers[i] = consts[i]
        else:
            buffers[i] = np.zeros(slot.shape, slot.dtype)
    calls = [(name, kernel_call(exe.kernels[name], *(buffers[a] for a in args)))
             for name, args in plan.steps]
    for _, call in calls:
        call()
    np.testing.assert_allclose(buffers[plan.outputs[0]], want, rtol=1e-3, atol=1e-3)
    timed = [call for name, call in calls if not name.startswith(LAYOUT_KERNELS)]

    def run(keep=(exe, buffers)):   # the default keeps the kernels and buffers alive
        for call in timed:
            call()
    return run, [(name, [plan.slots[a].shape for a in args]) for name, args in plan.steps]


def _choice(steps, k: int, groups: int) -> str:
    """What a compiled plan's ``steps`` (see :func:`_compiled`) run for the conv: Winograd,
    direct in blocks (with their sizes; padding of each group's output channels), or NCHW."""
    wino = next((shapes for name, shapes in steps if name.startswith("winograd_input")), None)
    if wino is not None:
        return f"Winograd, NCHW{wino[0][-1]}c"
    conv = next((shapes for name, shapes in steps if name.startswith("conv_nchwc")), None)
    if any("matmul" in name for name, _ in steps):
        return f"batched matmul, NCHW ({groups} groups)"
    if conv is None:
        return "NCHW" + (" (depthwise stays NCHW)" if groups > 1 and groups == k else "")
    w = conv[1]                      # (K'/co, C'/ci, kh, kw, ci, co)
    ci, co = w[4], w[5]
    text = f"direct, NCHW{co}c" if ci == co else f"direct, NCHW{ci}c -> NCHW{co}c"
    padded = w[0] * co
    if padded != k:
        text += f", {groups} groups of {k // groups} padded to {padded // groups}"
    return text


def cases(shapes=SHAPES, avx2: bool = False) -> tuple[list[Case], dict]:
    """The cases to measure, and per shape label what ``mb.compile`` runs for it (on this
    machine, and for the AVX2 target when ``avx2``)."""
    out, choices = [], {}
    rng = np.random.default_rng(0)
    for label, c, k, h, kern, stride, groups in shapes:
        p = kern // 2
        x = rng.standard_normal((1, c, h, h)).astype("float32")
        w = (rng.standard_normal((k, c // groups, kern, kern)) * 0.1).astype("float32")
        attrs = {"pads": (p,) * 4, "strides": (stride,) * 2, "kernel_shape": (kern, kern),
                 "group": groups}
        func = _graph(x.shape, w, attrs)
        want = mb.graph.interpret(func, x)
        progs = {NCHW: _compiled(func, x, want, opt_level=2)[0]}
        run, steps = _compiled(func, x, want, options={"winograd_min_flops": math.inf})
        blocked = _choice(steps, k, groups)
        if blocked.startswith(("direct", "batched matmul")):
            progs[BLOCKED] = run
        winograd = None
        if kern == 3 and stride == 1 and groups == 1:
            run, steps = _compiled(func, x, want, options={"winograd_min_flops": 0})
            winograd = _choice(steps, k, groups)
            if winograd.startswith("Winograd"):
                progs[WINOGRAD] = run
        # mb.compile's own pick: Winograd where the pass takes the conv, else the blocked one
        names = {n for n, _, _ in kernel_calls(func)}
        host = winograd if any(n.startswith("winograd") for n in names) else blocked
        choices[label] = {"host": host}
        if avx2:
            progs[AVX2], steps = _compiled(func, x, want, target=AVX2_TARGET)
            choices[label][AVX2] = _choice(steps, k, groups)
        for t in THREADS:
            sess = ort_session(_onnx(c, k, h, kern, stride, groups, w), t)
            out.append(Case("conv", (label, "onnxruntime"), t,
                            lambda s=sess, x=x: s.run(None, {"input": x})))
            for name, fn in progs.items():
                out.append(Case("conv", (label, name), t, fn))
    return out, choices


def report(cs, choices: dict, shapes=SHAPES) -> str:
    by = by_key(cs)
    avx2 = any(AVX2 in v for v in choices.values())
    rows = []
    for label, c, k, h, kern, stride, groups in shapes:
        gf = _flops(c, k, h, kern, stride, groups) / 1e9
        for t in THREADS:
            ort = by[((label, "onnxruntime"), t)]
            row = [label, t, f"{gf / ort.median:.1f}"]
            for name in (NCHW, BLOCKED, WINOGRAD) + ((AVX2,) if avx2 else ()):
                case = by.get(((label, name), t))
                if case is None:
                    row.append("stays NCHW (depthwise)" if name == BLOCKED and groups == k > 1
                               else "stays NCHW" if name == BLOCKED else "-")
                else:
                    other = name == AVX2 and choices[label][AVX2] != choices[label]["host"]
                    row.append(f"{gf / case.median:.1f} ({paired_ratio(ort, case)})"
                               + (f", {choices[label][AVX2]}" if other else ""))
                if name == WINOGRAD:
                    row.append(choices[label]["host"])
            rows.append(row)
    headers = ["conv (batch 1)", "threads", "onnxruntime GFLOP/s",
               "mlcbook NCHW GFLOP/s (vs ort)",
               "mlcbook blocked, direct (or batched matmul) GFLOP/s (vs ort)",
               "mlcbook Winograd effective GFLOP/s (vs ort)", "mb.compile runs"]
    if avx2:
        headers.append("AVX2 code (`-mcpu=x86-64-v3`) GFLOP/s (vs ort), what it runs where "
                       "that differs")
    return table(headers, rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--shapes", default=None,
                    help="comma-separated parts of shape labels: only the shapes whose label "
                    "contains one (e.g. 'groups,depthwise')")
    add_avx2_argument(ap, "convs")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS_convs.md"),
                    help="the results file: this CPU's section of it is replaced, other "
                    "CPUs' are kept")
    args = ap.parse_args(argv)
    shapes = SHAPES
    if args.shapes:
        parts = [p.strip() for p in args.shapes.split(",") if p.strip()]
        shapes = [s for s in SHAPES if any(p in s[0] for p in parts)]
        if not shapes:
            ap.error(f"no shape label contains any of {parts}; labels: "
                     + "; ".join(s[0] for s in SHAPES))
    avx2 = not args.no_avx2 and has_avx512()
    cs, choices = cases(shapes, avx2)
    measure(cs, args.rounds, group=lambda c: (c.key[0], c.threads))
    title = "Convolutions: mlcbook default schedules vs onnxruntime"
    cmd = shlex.join(["python", "bench/convs.py", *(argv if argv is not None else sys.argv[1:])])
    text = (f"Written by `{cmd}` ({args.rounds} rounds; each conv's contenders "
            f"at one thread count interleaved side by side; GFLOP/s from the median time; "
            f"(vs ort) is the median over rounds of onnxruntime's time / mlcbook's in the same "
            f"round, with its 95% interval: > 1 means faster than onnxruntime; the kernels "
            f"`mb.compile` makes for a one-conv graph, see bench/convs.py).\n\n"
            f"{report(cs, choices, shapes)}\n\n"
            f"Machine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
