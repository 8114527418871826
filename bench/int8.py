"""int8 matmul, n x n x n: mlcbook's tensorized int8 kernel beside mlcbook's best fp32
matmul, numpy's int32 matmul and onnxruntime's MatMulInteger, in the same run. Then whole
quantized models: the CNN and MLP of ``bench/e2e.py`` quantized by onnxruntime (QDQ format,
:func:`mlcbook.frontend.quantize.quantize_qdq`), int8 beside the same model in fp32, for
mlcbook and for onnxruntime, so mlcbook's int8 speed-up stands beside onnxruntime's own.

    python bench/int8.py                    # n = 1024 and the two models, 1 and 2 threads
    python bench/int8.py --sizes 256 --rounds 2 --save   # smoke run; --save writes RESULTS_int8.md
    python bench/int8.py --models --integer-models    # the matmul only

The int8 rows, each named by the tensor call that ran (read from the lowered program):

- ``7-bit weights`` and ``8-bit weights``: the kernel of a quantized model's dense layer
  (``int8_matmul_tiled`` under its default schedule). With AVX2 only, the register-tiled
  ``pmaddubsw`` kernel for weights in [-64, 64] (onnxruntime's ``reduce_range``, proven by
  ``pairs_fit_int16``) and the always-exact ``pmaddwd`` kernel for full-range weights; with
  AVX-512 VNNI, ``vpdpbusd`` for both.
- ``chapter 8``: ``schedule_int8_matmul``, one dot-product instruction per tile with the
  sums in memory (the chapter's teaching kernel, ``x86.avx2.dot_u8i8_8x4`` on AVX2).

Last, the same MLP written with MatMul and quantized by onnxruntime into ONNX's integer ops
(``quantize_dynamic``: MatMulInteger; ``quantize_static`` in QOperator format:
QLinearMatMul), run by mlcbook (whose ``lower_integer_ops`` puts the int8 kernels in their
place) beside onnxruntime running the same file.

The bf16 row is the fp32 schedule on bfloat16 inputs (widened to float32 as loaded, summed
in float32): without AVX-512 BF16's ``vdpbf16ps`` it can at best match fp32, halving only
the bytes the inputs take.

The ``bf16 vdpbf16ps`` row (CPUs with AVX-512 BF16 only, "-" elsewhere) is
``mlcbook.graph.kernels.bf16_matmul``: B packed in bf16 pairs, register tiles of float32 sums
added by ``vdpbf16ps``, two products per lane per instruction.

On a host with AVX-512 the quantized models are also compiled for ``-mcpu=x86-64-v3`` (the
AVX2 code of a CPU without VNNI: the ``pmaddubsw`` kernels) and timed in the same rounds, fp32
and int8; ``--no-avx2`` leaves them out.

The issue's targets (int8 >= 2.5x fp32 with VNNI, bf16 >= 1.5x fp32) can only be judged on a
CPU with VNNI / AVX-512 BF16. onnxruntime's MatMulInteger gets the 7-bit weights (its AVX2
kernel saturates on full-range ones). Operations are counted as 2 n^3 (a multiply and an
add per term).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from _common import (AVX2_TARGET, Case, add_avx2_argument, by_key, has_avx512, kernel_call,
                     machine, measure, ort_session, table, write_results)

SIZES = (1024,)
MODELS = ("cnn", "mlp")
THREADS = (1, 2)
PROGRAMS = ("mlcbook int8, 7-bit weights", "mlcbook int8, 8-bit weights",
            "mlcbook int8, chapter 8", "mlcbook bf16", "mlcbook bf16 vdpbf16ps",
            "mlcbook fp32 best", "numpy int32",
            "onnxruntime MatMulInteger")


def tensor_calls(kernel) -> str:
    """The tensor calls in a built kernel's lowered program, e.g. ``x86.u8i8_tile...``."""
    import re
    return ", ".join(sorted(set(re.findall(r'tensor_call\("([^"]+)"',
                                           kernel.lowered.script())))) or "none"


def _ort_matmul_integer(n: int, threads: int):
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["C"])], "mmi",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [n, n]),
         helper.make_tensor_value_info("B", TensorProto.INT8, [n, n])],
        [helper.make_tensor_value_info("C", TensorProto.INT32, [n, n])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return ort_session(model, threads)


def cases(sizes=SIZES) -> tuple[list[Case], dict]:
    import mlcbook as mb
    from mlcbook.graph.kernels.bf16_matmul import bf16_matmul, bf16_variant, pack_bf16, \
        schedule_bf16_matmul
    from mlcbook.graph.kernels.int8_matmul import dot_lanes, int8_matmul, int8_matmul_tiled, \
        pack_weights, schedule_int8_matmul
    from mlcbook.rules.int8 import schedule_int8_kernel
    from mlcbook.ops.int8_kernels import pack_int8
    from mlcbook.tir.x86_intrinsics import pairs_fit_int16
    import _programs as P
    lanes = dot_lanes()
    rng = np.random.default_rng(0)
    out, calls = [], {}
    for n in sizes:
        a = rng.integers(0, 256, (n, n), dtype=np.uint8)
        # 7-bit weights: onnxruntime's AVX2 u8 x s8 kernel adds pairs of products in int16
        # with saturation (vpmaddubsw), so full-range int8 weights give it wrong sums (at
        # n=256, 99% of the outputs); its quantizer keeps weights in 7 bits (reduce_range)
        b = rng.integers(-64, 64, (n, n), dtype=np.int8)       # (N, K)
        b8 = rng.integers(-128, 128, (n, n), dtype=np.int8)
        a32, bt32 = a.astype(np.int32), np.ascontiguousarray(b.T.astype(np.int32))
        ref = a32 @ bt32
        tiled = {}
        for label, w in (("7-bit weights", b), ("8-bit weights", b8)):
            wp = pack_int8(w)
            kern = mb.build(schedule_int8_kernel(int8_matmul_tiled(n, n, n, pairs_fit_int16(wp))))
            c = np.zeros((n, n // 16, 16), np.int32)
            kern(a, wp, c)
            if not np.array_equal(c.reshape(n, n), a32 @ w.T.astype(np.int32)):
                raise SystemExit(f"int8 matmul ({label}) n={n}: wrong result")
            tiled[label] = (kern, wp, c)
            calls[f"mlcbook int8, {label}"] = tensor_calls(kern)
        kern = mb.build(schedule_int8_matmul(int8_matmul(n, n, n, lanes)))
        calls["mlcbook int8, chapter 8"] = tensor_calls(kern)
        c = np.zeros((n, n), np.int32)
        bp = pack_weights(b, lanes)
        kern(a, bp, c)
        if not np.array_equal(c, ref):
            raise SystemExit(f"int8 matmul (chapter 8) n={n}: wrong result")
        fa, fb = a.astype(np.float32), np.ascontiguousarray(b.T.astype(np.float32))
        fkern = mb.build(P.matmul_best(n))
        fc = np.zeros((n, n), np.float32)
        # bf16: the fp32 schedule on bfloat16 A and B, widened on load, fp32 accumulation
        # (no AVX-512 BF16 dot instruction is used: this measures the storage format only)
        ha, hb = fa.astype("bfloat16"), fb.astype("bfloat16")
        hkern, hc = mb.build(P.matmul_best(n, in_dtype="bfloat16")), np.zeros((n, n), np.float32)
        hkern(ha, hb, hc)
        hwant = ha.astype(np.float32).astype(np.float64) @ hb.astype(np.float32).astype(np.float64)
        if not np.allclose(hc, hwant, rtol=1e-4, atol=1e-2 * n):
            raise SystemExit(f"bf16 matmul n={n}: wrong result")
        # bf16 with vdpbf16ps register tiles, only where this CPU has AVX-512 BF16
        dkern = None
        if bf16_variant() is not None and n % 16 == 0:
            dkern, dbp = mb.build(schedule_bf16_matmul(bf16_matmul(n, n, n))), pack_bf16(hb)
            dc = np.zeros((n, n), np.float32)
            dkern(ha, dbp, dc)
            if not np.allclose(dc, hwant, rtol=1e-4, atol=1e-2 * n):
                raise SystemExit(f"bf16 vdpbf16ps matmul n={n}: wrong result")
            calls["mlcbook bf16 vdpbf16ps"] = tensor_calls(dkern)
        # one session per thread count: onnxruntime's default is every core, and its idle
        # workers spin for tens of ms after a run, taking a core from what runs next (the
        # harness settles after every case of more than one thread)
        sessions = {t: _ort_matmul_integer(n, t) for t in THREADS}
        bkn = np.ascontiguousarray(b.T)
        if not np.array_equal(sessions[1].run(None, {"A": a, "B": bkn})[0], ref):
            raise SystemExit(f"onnxruntime MatMulInteger n={n}: wrong result")
        c_np = np.empty((n, n), np.int32)
        for t in THREADS:
            for label, (k8, wp, c8) in tiled.items():
                out.append(Case("int8", (n, f"mlcbook int8, {label}"), t,
                                kernel_call(k8, a, wp, c8)))
            out.append(Case("int8", (n, "mlcbook int8, chapter 8"), t,
                            kernel_call(kern, a, bp, c)))
            out.append(Case("int8", (n, "mlcbook fp32 best"), t, kernel_call(fkern, fa, fb, fc)))
            out.append(Case("int8", (n, "mlcbook bf16"), t, kernel_call(hkern, ha, hb, hc)))
            if dkern is not None:
                out.append(Case("int8", (n, "mlcbook bf16 vdpbf16ps"), t,
                                kernel_call(dkern, ha, dbp, dc)))
            out.append(Case("int8", (n, "onnxruntime MatMulInteger"), t,
                            lambda s=sessions[t], a=a, b=bkn: s.run(None, {"A": a, "B": b})))
        # numpy's integer matmul does not use BLAS nor threads: one thread only, and at
        # n >= 1024 it takes seconds, so it is measured once there
        out.append(Case("int8", (n, "numpy int32"), 1,
                        lambda x=a32, y=bt32, o=c_np: np.matmul(x, y, out=o), once=n >= 1024))
    return out, calls


def report(all_cases: list[Case], calls: dict) -> str:
    by = by_key(all_cases)
    rows = []
    for n in sorted({c.key[0] for c in all_cases}):
        ops = 2 * n**3
        for p in PROGRAMS:
            cells = [f"{n}", p, f"`{calls[p]}`" if p in calls else ""]
            for t in (1, 2):
                c = by.get(((n, p), t)) or by.get(((n, p), 1))
                if c is None:   # not run on this CPU (bf16 vdpbf16ps without AVX-512 BF16)
                    cells += ["-", "-"]
                    continue
                g = ops / c.median / 1e9
                f32 = ops / by[((n, "mlcbook fp32 best"), t)].median / 1e9
                mark = " †" if c.threads != t else ""
                cells += [f"{g:.1f}{mark}{' (1 run)' if c.once else ''}", f"{g / f32:.2f}x"]
            rows.append(cells)
    vnni = any("vpdpbusd" in v for v in calls.values())
    head = ("VNNI and BF16 figures need a CPU with AVX-512 VNNI / "
            "BF16" + ("" if vnni else "; this one has neither, so the 2.5x (int8 VNNI) and "
                                     "1.5x (bf16) targets cannot be measured here") + ".\n"
            "† measured with 1 thread only.\n\n")
    return head + table(["n", "program", "tensor call", "GOP/s, 1 thread", "vs fp32 best",
                         "GOP/s, 2 threads", "vs fp32 best"], rows)


def _model(name: str):
    from mlcbook.frontend import examples
    if name == "mlp":
        return examples.mlp(batch=64), (64, 784)
    return examples.cnn(batch=8), (8, 1, 28, 28)


def _output_step(qmodel) -> float:
    """The scale of the quantized output: the model ends in DequantizeLinear(y, scale, zp)."""
    from onnx import numpy_helper
    g = qmodel.graph
    last = next(n for n in g.node if g.output[0].name in n.output)
    assert last.op_type == "DequantizeLinear", last.op_type
    return float(numpy_helper.to_array(next(i for i in g.initializer if i.name == last.input[1])))


def model_cases(models=MODELS, avx2: bool = False) -> tuple[list[Case], dict]:
    """Each model in fp32 and QDQ int8, compiled by mlcbook and run by onnxruntime; the int8
    outputs must agree within one quantization step of the output. With ``avx2``, mlcbook's
    also compiled for :data:`_common.AVX2_TARGET` (the code a CPU without AVX-512 runs).
    Also returns each model's int8 tensor calls."""
    import logging

    import onnxruntime as ort

    import mlcbook as mb
    from mlcbook.frontend.quantize import quantize_qdq
    rng = np.random.default_rng(0)
    out, calls = [], {}
    for name in models:
        model, shape = _model(name)
        logging.disable(logging.WARNING)   # onnxruntime's advice to pre-process, at length
        qmodel = quantize_qdq(model, [{"input": rng.standard_normal(shape).astype(np.float32)}
                                      for _ in range(8)])
        logging.disable(logging.NOTSET)
        step = _output_step(qmodel)
        x = rng.standard_normal(shape).astype(np.float32)
        for kind, m in (("fp32", model), ("int8", qmodel)):
            exe = mb.compile(mb.from_onnx(m))
            if kind == "int8":
                calls[name] = ", ".join(sorted({tensor_calls(k) for k in exe.kernels.values()}
                                               - {"none"}))
            got = exe(x)
            if avx2:
                code = mb.compile(mb.from_onnx(m), target=AVX2_TARGET)
                y = code(x)   # exact integer sums: the int8 code agrees to the bit
                if not (np.array_equal(y, got) if kind == "int8" else
                        np.allclose(y, got, rtol=1e-3, atol=1e-4)):
                    raise SystemExit(f"{name} {kind}: the AVX2 code computes other values")
                for t in THREADS:
                    out.append(Case("model", (name, f"mlcbook AVX2 {kind}"), t,
                                    lambda e=code, x=x: e(x)))
            for t in THREADS:
                opts = ort.SessionOptions()
                opts.intra_op_num_threads, opts.inter_op_num_threads = t, 1
                sess = ort.InferenceSession(m.SerializeToString(), opts,
                                            providers=["CPUExecutionProvider"])
                want = sess.run(None, {"input": x})[0]
                err = np.abs(got - want).max()
                if err > (step * 1.001 if kind == "int8" else 1e-3):
                    raise SystemExit(f"{name} {kind}: mlcbook and onnxruntime disagree by {err}")
                out.append(Case("model", (name, f"onnxruntime {kind}"), t,
                                lambda s=sess, x=x: s.run(None, {"input": x})))
                out.append(Case("model", (name, f"mlcbook {kind}"), t, lambda e=exe, x=x: e(x)))
    return out, calls


def model_report(all_cases: list[Case], calls: dict) -> str:
    by = by_key(all_cases)
    avx2 = any(c.key[1].startswith("mlcbook AVX2") for c in all_cases)
    groups = ["mlcbook", "onnxruntime"] + (["mlcbook AVX2"] if avx2 else [])
    rows = []
    for name in sorted({c.key[0] for c in all_cases}):
        for t in THREADS:
            row = [name, t]
            for g in groups:
                fp32, int8 = (by[((name, f"{g} {k}"), t)].median * 1e3 for k in ("fp32", "int8"))
                row += [f"{fp32:.3f}", f"{int8:.3f}", f"{fp32 / int8:.2f}x"]
            rows.append(row)
    heads = ["model", "threads"]
    for g in groups:
        g = g.replace("AVX2", f"AVX2 code (`{AVX2_TARGET.split()[-1]}`)")
        heads += [f"{g} fp32 ms", f"{g} int8 ms", f"{g} speed-up"]
    return ("Quantized models (QDQ, quantize_static: uint8 activations, int8 weights): "
            "speed-up = fp32 time / int8 time, higher is better; medians of interleaved "
            "repeats. The int8 tensor calls that ran: " + "; ".join(
                f"{m}: `{c}`" for m, c in sorted(calls.items())) + ".\n\n" + table(heads, rows))


def _matmul_mlp(batch: int = 64, sizes=(784, 512, 256, 10)):
    """The MLP of ``examples.mlp`` written with MatMul + Add (onnxruntime quantizes MatMul
    to MatMulInteger / QLinearMatMul; Gemm would become its contrib op QGemm)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "input"
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        inits += [numpy_helper.from_array((rng.standard_normal((i, o)) / np.sqrt(i)).astype(
            np.float32), f"w{k}"), numpy_helper.from_array(
            (rng.standard_normal(o) * 0.1).astype(np.float32), f"b{k}")]
        nodes += [helper.make_node("MatMul", [x, f"w{k}"], [f"m{k}"]),
                  helper.make_node("Add", [f"m{k}", f"b{k}"], [f"a{k}"])]
        x = f"a{k}"
        if k < len(sizes) - 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{k}"]))
            x = f"r{k}"
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, sizes[0]])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, sizes[-1]])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), (batch, sizes[0])


def _quantize_integer_ops(model, kind: str, calibration):
    """``model`` quantized by onnxruntime into ONNX integer ops, 7-bit weights
    (``reduce_range``, as for its AVX2 kernels): ``dynamic`` (quantize_dynamic:
    DynamicQuantizeLinear + MatMulInteger) or ``qoperator`` (quantize_static, QOperator
    format: QLinearMatMul)."""
    import logging
    import tempfile

    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_dynamic, quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(calibration)

        def get_next(self):
            return next(self.feeds, None)
    logging.disable(logging.WARNING)   # onnxruntime's advice to pre-process, at length
    try:
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "float.onnx"), os.path.join(d, "int.onnx")
            onnx.save(model, src)
            if kind == "dynamic":
                quantize_dynamic(src, dst, weight_type=QuantType.QInt8, reduce_range=True)
            else:
                quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator,
                                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                reduce_range=True, op_types_to_quantize=["MatMul"])
            return onnx.load(dst)
    finally:
        logging.disable(logging.NOTSET)


#: onnxruntime-quantized MLPs in ONNX integer ops -> the op that carries their products
INTEGER_MODELS = {"dynamic": "MatMulInteger", "qoperator": "QLinearMatMul"}


def integer_model_cases(kinds=tuple(INTEGER_MODELS)) -> tuple[list[Case], dict]:
    """The MatMul MLP quantized by onnxruntime into ONNX integer ops, compiled by mlcbook
    (``lower_integer_ops`` puts its int8 kernels in) and run by onnxruntime; the outputs
    must agree within one step of the last layer's output quantization (float32 rounding
    for ``dynamic``, whose output is float). Also returns each model's tensor calls."""
    import mlcbook as mb
    rng = np.random.default_rng(0)
    model, shape = _matmul_mlp()
    out, calls = [], {}
    for kind in kinds:
        q = _quantize_integer_ops(model, kind, [
            {"input": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])
        op = INTEGER_MODELS[kind]
        if op not in {n.op_type for n in q.graph.node}:
            raise SystemExit(f"{kind}: onnxruntime's quantizer did not produce {op}")
        exe = mb.compile(mb.from_onnx(q))
        calls[kind] = ", ".join(sorted({tensor_calls(k) for k in exe.kernels.values()} - {"none"}))
        x = rng.standard_normal(shape).astype(np.float32)
        got = exe(x)
        for t in THREADS:
            sess = ort_session(q, t, quiet=True)
            want = sess.run(None, {"input": x})[0]
            tol = 1e-5 * np.abs(want).max() if kind == "dynamic" else _last_step(q) * 1.001
            if np.abs(got - want).max() > tol:
                raise SystemExit(f"{kind}: mlcbook and onnxruntime disagree by "
                                 f"{np.abs(got - want).max()}")
            out.append(Case("integer", (kind, "onnxruntime"), t,
                            lambda s=sess, x=x: s.run(None, {"input": x})))
            out.append(Case("integer", (kind, "mlcbook"), t, lambda e=exe, x=x: e(x)))
    return out, calls


def _last_step(qmodel) -> float:
    """The output scale of the model's last QLinearMatMul (its input 6)."""
    from onnx import numpy_helper
    last = [n for n in qmodel.graph.node if n.op_type == "QLinearMatMul"][-1]
    return float(numpy_helper.to_array(next(i for i in qmodel.graph.initializer
                                            if i.name == last.input[6])))


def integer_model_report(all_cases: list[Case], calls: dict) -> str:
    by = by_key(all_cases)
    rows = []
    for kind in sorted({c.key[0] for c in all_cases}):
        for t in THREADS:
            mb_ms, ort_ms = (by[((kind, p), t)].median * 1e3 for p in ("mlcbook", "onnxruntime"))
            rows.append([f"{kind} ({INTEGER_MODELS[kind]})", t, f"{mb_ms:.3f}", f"{ort_ms:.3f}",
                         f"{ort_ms / mb_ms:.2f}x"])
    return ("ONNX integer-op models: the MLP (784-512-256-10, batch 64, MatMul + Add) quantized "
            "by onnxruntime (7-bit weights), run by mlcbook and by onnxruntime; speed = "
            "onnxruntime time / mlcbook time, higher is faster for mlcbook. The int8 tensor "
            "calls that ran: " + "; ".join(f"{k}: `{c}`" for k, c in sorted(calls.items())) +
            ".\n\n" + table(["model", "threads", "mlcbook ms", "onnxruntime ms",
                              "mlcbook speed vs onnxruntime"], rows))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS,
                    help="quantized models to run (none: the matmul only)")
    ap.add_argument("--integer-models", nargs="*", default=list(INTEGER_MODELS),
                    choices=list(INTEGER_MODELS),
                    help="onnxruntime-quantized models in ONNX integer ops (none: skip)")
    ap.add_argument("--save", action="store_true",
                    help="write this CPU's section of bench/RESULTS_int8.md (other CPUs' "
                    "sections are kept)")
    ap.add_argument("--out", default=None, help="with --save: the results file to write")
    add_avx2_argument(ap, "quantized models")
    args = ap.parse_args(argv)
    cs, calls = cases(args.sizes)
    ms, model_calls = model_cases(args.models, avx2=has_avx512() and not args.no_avx2)
    ims, integer_calls = integer_model_cases(args.integer_models)
    measure(cs + ms + ims, args.rounds)
    text = report(cs, calls) + ("\n\n" + model_report(ms, model_calls) if ms else "") + (
        "\n\n" + integer_model_report(ims, integer_calls) if ims else "") + (
        f"\n\nMachine: {machine()}\n")
    print(text)
    if args.save or args.out:
        path = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                        "RESULTS_int8.md")
        argv_text = " ".join(sys.argv[1:] if argv is None else argv)
        write_results(path, "int8 matmul and quantized models",
                      f"`python bench/int8.py {argv_text}`\n\n{text}")


if __name__ == "__main__":
    main()
