"""Convolutions of ResNet/Inception shapes (batch 1): GFLOP/s of mlcbook's default
schedules in NCHW and in the blocked NCHW16c layout (what ``mb.compile`` uses at opt_level
3), and for 3x3 convs with stride 1 by Winograd's F(2x2, 3x3) (its three kernels in NCHW16c,
which ``mb.compile`` uses for the big ones), beside onnxruntime's Conv, at 1 and 2 threads.

    python bench/convs.py                  # writes bench/RESULTS_convs.md
    python bench/convs.py --rounds 3       # quicker, noisier

mlcbook figures are the conv kernel alone (data already in its layout, weights packed at
compile time, as in a compiled model); onnxruntime's are a one-node model's ``run``, which
includes its own layout changes. GFLOP/s counts 2 * N*K*OH*OW*C/groups*KH*KW, the direct
conv's work, for Winograd too (its "effective" rate: it does 2.25x fewer products).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _common import (Case, by_key, kernel_call, machine, measure, ort_session,
                     paired_ratio, table)

import mlcbook as mb
from mlcbook.graph.default_schedule import default_schedule
from mlcbook.ops.layout import blocked, blocked_weight
from mlcbook.ops.legalize import legalize_call
from mlcbook.ops.types import TensorType
from mlcbook.te.ops.winograd import winograd_weight

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
    # shufflenet's grouped 1x1 convs (4 groups), most of its time in the zoo
    ("1x1 272->272 4 groups @14", 272, 272, 14, 1, 1, 4),
]
THREADS = (1, 2)


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


def _kernel(op: str, arrays: list, attrs: dict):
    """``op``'s default-scheduled kernel for ``arrays`` and an output array for it."""
    func = default_schedule(legalize_call(op, [TensorType(a.shape) for a in arrays], attrs))
    return mb.build(func), np.empty(func.outputs[0].shape, "float32")


def _winograd(xb, wb, out_shape, want):
    """The three Winograd kernels run one after the other, as a compiled model calls them;
    checked against ``want``."""
    u = winograd_weight(wb)
    k_in, v = _kernel("winograd_input", [xb], {"pads": (1, 1, 1, 1)})
    k_mm, m = _kernel("winograd_product", [v, u], {})
    k_out, y = _kernel("winograd_output", [m], {"out_hw": out_shape[2:4]})

    def run():
        k_in(xb, v)
        k_mm(v, u, m)
        k_out(m, y)
    run()
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
    return run


def cases():
    out = []
    rng = np.random.default_rng(0)
    for label, c, k, h, kern, stride, groups in SHAPES:
        p = kern // 2
        x = rng.standard_normal((1, c, h, h)).astype("float32")
        w = (rng.standard_normal((k, c // groups, kern, kern)) * 0.1).astype("float32")
        attrs = {"pads": (p,) * 4, "strides": (stride,) * 2, "kernel_shape": (kern, kern),
                 "group": groups}
        ref_out = mb.graph.interpret(mb.graph.Function(
            [v := mb.graph.Var("x", TensorType(x.shape))],
            mb.graph.op.conv(v, mb.graph.Constant(w), **attrs)), x)
        nchw = mb.build(default_schedule(legalize_call(
            "conv", [TensorType(x.shape), TensorType(w.shape)], attrs)))
        y = np.empty(ref_out.shape, "float32")
        nchw(x, w, y)
        np.testing.assert_allclose(y, ref_out, rtol=1e-3, atol=1e-3)
        progs = {"mlcbook NCHW": kernel_call(nchw, x, w, y)}
        if groups == 1:
            ci = 16 if c % 16 == 0 else c
            xb, wb = blocked(x, ci), blocked_weight(w, ci, 16)
            kb = mb.build(default_schedule(legalize_call(
                "conv_nchwc", [TensorType(xb.shape), TensorType(wb.shape)],
                {"pads": (p,) * 4, "strides": (stride,) * 2})))
            yb = np.empty(blocked(ref_out, 16).shape, "float32")
            kb(xb, wb, yb)
            np.testing.assert_allclose(yb, blocked(ref_out, 16), rtol=1e-3, atol=1e-3)
            progs["mlcbook NCHW16c"] = kernel_call(kb, xb, wb, yb)
            if kern == 3 and stride == 1:
                progs["mlcbook Winograd"] = _winograd(xb, wb, yb.shape, blocked(ref_out, 16))
        for t in THREADS:
            sess = ort_session(_onnx(c, k, h, kern, stride, groups, w), t)
            out.append(Case("conv", (label, "onnxruntime"), t,
                            lambda s=sess, x=x: s.run(None, {"input": x})))
            for name, fn in progs.items():
                out.append(Case("conv", (label, name), t, fn))
    return out


def report(cs) -> str:
    by = by_key(cs)
    rows = []
    for label, c, k, h, kern, stride, groups in SHAPES:
        gf = _flops(c, k, h, kern, stride, groups) / 1e9
        for t in THREADS:
            ort_s = by[((label, "onnxruntime"), t)].median
            row = [label, t, f"{gf / ort_s:.1f}"]
            for name in ("mlcbook NCHW", "mlcbook NCHW16c", "mlcbook Winograd"):
                case = by.get(((label, name), t))
                if case is None:
                    row.append("-")
                    continue
                speedup = paired_ratio(by[((label, "onnxruntime"), t)], case)
                row.append(f"{gf / case.median:.1f} ({speedup})")
            rows.append(row)
    return table(["conv (batch 1)", "threads", "onnxruntime GFLOP/s",
                  "mlcbook NCHW GFLOP/s (vs ort)", "mlcbook NCHW16c GFLOP/s (vs ort)",
                  "mlcbook Winograd effective GFLOP/s (vs ort)"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args(argv)
    cs = cases()
    measure(cs, args.rounds, group=lambda c: (c.key[0], c.threads))
    text = (f"# Convolutions: mlcbook default schedules vs onnxruntime\n\n"
            f"Written by `python bench/convs.py` ({args.rounds} rounds; each conv's contenders "
            f"at one thread count interleaved side by side; GFLOP/s from the median time; "
            f"(vs ort) is the median over rounds of onnxruntime's time / mlcbook's in the same "
            f"round, with its 95% interval: > 1 means faster than onnxruntime).\n\n"
            f"{report(cs)}\n\n"
            f"Machine: {machine()}.\n")
    print(text)
    (Path(__file__).resolve().parent / "RESULTS_convs.md").write_text(text)


if __name__ == "__main__":
    main()
