"""Depthwise convs in blocks: MobileNetV2-style inverted residual blocks (1x1 expand, depthwise
3x3, 1x1 project; five blocks from 56x56 to 14x14) compiled by ``mb.compile`` (the depthwise
convs stay in the 1x1 convs' blocked layout, ``depthwise_nchwc``) and with the depthwise
convs in NCHW as before (``nchw dw``: two layout copies each), beside onnxruntime running the
same model, in interleaved rounds of one process, at 1 and 2 threads.

    python bench/depthwise.py                # writes bench/RESULTS_depthwise.md
    python bench/depthwise.py --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import numpy as np

from _common import Case, by_key, machine, measure, ort_session, paired_ratio, table, \
    write_results

THREADS = (1, 2)
#: (expanded channels, output channels, stride) of each block
BLOCKS = ((96, 32, 1), (96, 48, 2), (144, 48, 1), (144, 64, 2), (256, 64, 1))


def model():
    """The graph-IR Function of :data:`BLOCKS` on a (1, 32, 56, 56) input."""
    import mlcbook as mb
    from mlcbook.graph import Constant, Function, Var, op
    rng = np.random.default_rng(0)
    x = Var("x", mb.graph.TensorType((1, 32, 56, 56)))
    y, c = x, 32
    for k, (expand, out, stride) in enumerate(BLOCKS):
        def weight(shape, scale, name):
            return Constant((rng.standard_normal(shape) * scale).astype("float32"), name)
        h = op.relu(op.conv(y, weight((expand, c, 1, 1), 0.1, f"expand{k}")))
        h = op.relu(op.conv(h, weight((expand, 1, 3, 3), 0.3, f"depthwise{k}"),
                            pads=(1, 1, 1, 1), strides=(stride, stride), group=expand))
        h = op.conv(h, weight((out, expand, 1, 1), 0.1, f"project{k}"))
        y, c = (op.add(h, y) if stride == 1 and out == c else h), out
    return Function([x], y)


@contextlib.contextmanager
def depthwise_in_nchw():
    """``mb.compile`` with every depthwise conv left in NCHW (the layout pass before
    ``depthwise_nchwc``)."""
    from mlcbook.graph.passes import layout
    keep = layout._ConvertLayout._depthwise
    layout._ConvertLayout._depthwise = lambda self, conv: conv
    try:
        yield
    finally:
        layout._ConvertLayout._depthwise = keep


def cases() -> list[Case]:
    import mlcbook as mb
    f = model()
    x = np.random.default_rng(1).standard_normal((1, 32, 56, 56)).astype("float32")
    exes = {"mlcbook": mb.compile(f)}
    with depthwise_in_nchw():
        exes["nchw dw"] = mb.compile(f)
    assert any("depthwise_nchwc" in k for k in exes["mlcbook"].kernels)
    out = []
    for t in THREADS:
        sess = ort_session(mb.to_onnx(f), t, quiet=True)
        feed = {sess.get_inputs()[0].name: x}
        want = sess.run(None, feed)[0]
        out.append(Case("depthwise", ("onnxruntime",), t, lambda s=sess, f=feed: s.run(None, f)))
        for name, exe in exes.items():
            np.testing.assert_allclose(exe(x), want, rtol=1e-3, atol=1e-3)
            out.append(Case("depthwise", (name,), t, lambda e=exe: e(x)))
    return out


def report(all_cases: list[Case]) -> str:
    by = by_key(all_cases)
    rows = []
    for t in THREADS:
        ort, ours, nchw = (by[((k,), t)] for k in ("onnxruntime", "mlcbook", "nchw dw"))
        rows.append([t, f"{ours.median * 1e3:.3f}", f"{nchw.median * 1e3:.3f}",
                     f"{ort.median * 1e3:.3f}", str(paired_ratio(ours, ort)),
                     str(paired_ratio(nchw, ort)), str(paired_ratio(ours, nchw))])
    return table(["threads", "mlcbook ms", "nchw dw ms", "onnxruntime ms",
                  "mlcbook / onnxruntime", "nchw dw / onnxruntime", "mlcbook / nchw dw"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent /
                                         "RESULTS_depthwise.md"))
    args = ap.parse_args(argv)
    cs = cases()
    measure(cs, args.rounds, group=lambda c: c.threads)
    title = "Depthwise convs in blocks: MobileNetV2-style blocks vs onnxruntime"
    text = (f"Written by `python bench/depthwise.py` ({args.rounds} interleaved rounds; "
            f"blocks {BLOCKS} on a 1x32x56x56 input; median of each round's ratio, 95% "
            f"interval; lower is better).\n\n{report(cs)}\n\nMachine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
