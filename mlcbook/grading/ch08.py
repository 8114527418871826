"""Checkers for chapter 8, *Hardware-native acceleration*: an intrinsic, a tensorized
schedule, a quantized layer.

* ``08.register_dot`` — register a tensor intrinsic: ``register_dot(name)`` registers under
  ``name`` a ``desc`` for the AVX2 op ``"x86.dot_u8i8.8x4"`` (impl given); judged by running
  the student's ``desc`` through the interpreter against this module's numpy model of the
  op on random and extreme tiles, natively against the instruction where the CPU has AVX2,
  and by tensorizing a matmul with it;
* ``08.tensorize_matmul`` — schedule an int8 matmul so that its block is computed by
  ``x86.avx2.dot_u8i8_8x4`` and return the Schedule: the lowered program must call the
  instruction, and compute
  the matmul (interpreted, and natively where the CPU has AVX2);
* ``08.quantize_layer`` — quantize a layer (uint8 activations, int8 weights per output row,
  round to nearest, scales that fit the data's range) and bound the error of the quantized
  product; the bound must hold on adversarial data built with the same scales and ranges,
  count all three terms of each product's error (dx·w, x·dw and dx·dw), and be no looser
  than twice the worst case.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import MLCError
from ..tir.function import PrimFunc
from .compare import Fail, call, trial
from .registry import exercise

#: the AVX2 dot op: C[i] += int32(A[k]) * int32(B[i, k]) for i < 8, k < 4
DOT_OP = "x86.dot_u8i8.8x4"
DOT_TILES = (((4,), "uint8"), ((8, 4), "int8"), ((8,), "int32"))
DOT_IMPL = f'''
@T.prim_func(root=False)
def dot_impl(A: T.Buffer((4,), "uint8"), B: T.Buffer((8, 4), "int8"),
             C: T.Buffer((8,), "int32")):
    T.evaluate(T.tensor_call("{DOT_OP}", A[0], B[0, 0], C[0]))
'''


def dot_impl() -> PrimFunc:
    """The impl half of the AVX2 u8 x i8 dot intrinsic (``DOT_IMPL``, parsed)."""
    from ..script import parse
    return parse(DOT_IMPL)


def int8_matmul(m: int, n: int, k: int) -> PrimFunc:
    """``C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k])``: A (m, k) uint8, B (n, k) int8,
    C (m, n) int32; one block ``"C"`` under loops ``i, j, k``."""
    from ..script import parse
    return parse(f'''
@T.prim_func
def int8_matmul(A: T.Buffer(({m}, {k}), "uint8"), B: T.Buffer(({n}, {k}), "int8"),
                C: T.Buffer(({m}, {n}), "int32")):
    for i, j, k in T.grid({m}, {n}, {k}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.int32(0)
            C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", B[vj, vk])
''')


def _host_has_avx2() -> bool:
    from ..codegen.target import Target
    target = Target()
    return target.arch == "x86_64" and target.has_feature("avx2")


def _int8_data(rng, shapes, extreme: bool):
    (sa, _), (sb, _), (sc, _) = shapes
    if extreme:  # the corners where 16-bit pair sums would saturate
        return (np.full(sa, 255, np.uint8), np.full(sb, -128, np.int8),
                np.full(sc, 2**30, np.int32))
    return (rng.integers(0, 256, sa).astype(np.uint8), rng.integers(-128, 128, sb).astype(np.int8),
            rng.integers(-2**20, 2**20, sc).astype(np.int32))


def _tensorized(func: PrimFunc, block: str, intrin: str) -> PrimFunc:
    """``func`` with the loops around ``block`` (all of them) tensorized with ``intrin``."""
    from ..schedule import Schedule
    sch = Schedule(func)
    try:
        sch.tensorize(sch.get_loops(sch.get_block(block))[0], intrin)
    except MLCError as err:
        raise Fail(f"your desc, tensorized with its own intrinsic, is refused: {err}") from None
    return sch.func


# --- 08.register_dot ----------------------------------------------------------------------------
_names = itertools.count()


def _require_own_desc(desc: PrimFunc, library: dict[str, PrimFunc]) -> None:
    """Refuse a ``desc`` that is a built-in intrinsic's own (the object, or a copy or a
    re-parsed print of it, which keep its name, dots printed as underscores): the exercise
    is to write it."""
    def plain(name: str) -> str:
        return name.replace(".", "_")
    for intrin, theirs in library.items():
        if desc is theirs or plain(desc.name) == plain(theirs.name):
            raise Fail(f"your desc is the library's own, of {intrin!r}: the exercise is to "
                       "write it", "write the @T.prim_func yourself: one loop nest around one "
                       "block whose store says what the instruction computes",
                       about_inputs=False)


@exercise("08.register_dot", points=2, answer="register_dot",
          title="Register a tensor intrinsic")
def _check_register_dot(answer, rng):
    from ..runtime import build
    from ..schedule import Schedule
    from ..tir.expr import TensorCall
    from ..tir.interpreter import interpret
    from ..tir.stmt import Evaluate
    from ..tir.tensor_intrin import TensorIntrin, desc_nest
    name = f"check08.dot_{next(_names)}"
    library = {n: TensorIntrin.get(n).desc for n in TensorIntrin.names()
               if not n.startswith("check08.")}
    intrin = call(answer, "register_dot", name)
    try:
        registered = TensorIntrin.get(name)
    except MLCError:
        raise Fail(f"register_dot({name!r}) registered nothing under that name",
                   "call mb.tir.TensorIntrin.register(name, desc, impl) with the name it "
                   "is given", about_inputs=False) from None
    if intrin is not registered:
        raise Fail("register_dot should return the TensorIntrin that register returned",
                   about_inputs=False)
    impl = registered.impl
    if not (isinstance(impl.body, Evaluate) and isinstance(impl.body.value, TensorCall)
            and impl.body.value.op == DOT_OP
            and [(p.shape, p.dtype) for p in impl.params] == list(DOT_TILES)):
        raise Fail(f"the impl should be the one given (it calls {DOT_OP!r} on tiles of "
                   "4 uint8, 8 x 4 int8, 8 int32)", about_inputs=False)
    desc = registered.desc
    _require_own_desc(desc, library)
    block = desc_nest(desc)[1].block.name
    for extreme in (False, True):
        what = "tiles of 255 x -128" if extreme else "random tiles"
        with trial(what):
            a, b, c = _int8_data(rng, DOT_TILES, extreme)
            want = c + b.astype(np.int32) @ a.astype(np.int32)
            got = c.copy()
            try:
                interpret(desc, a, b, got)
            except MLCError as err:
                raise Fail(f"your desc does not run in the interpreter: {err}") from None
            if not np.array_equal(got, want):
                lane = int(np.argmax(got != want))
                raise Fail(f"your desc computes C[{lane}] = {got[lane]}, but the instruction "
                           f"computes {want[lane]} (C[i] + the sum over k < 4 of "
                           "int32(A[k]) * int32(B[i, k]))",
                           "desc must say exactly what the instruction does: 8 lanes, 4 "
                           "products each, added to what C holds")
            if _host_has_avx2():
                native = c.copy()
                build(_tensorized(desc, block, name))(a, b, native)
                if not np.array_equal(native, got):
                    raise Fail("the tensorized desc, run natively, differs from desc "
                               "interpreted")
    with trial("an 8 x 16 x 8 int8 matmul, tensorized with your intrinsic"):
        sch = Schedule(int8_matmul(8, 16, 8))
        i, j, k = sch.get_loops(sch.get_block("C"))
        j0, j1 = sch.split(j, [None, 8])
        k0, k1 = sch.split(k, [None, 4])
        sch.reorder(i, j0, k0, j1, k1)
        try:
            sch.tensorize(j1, name)
        except MLCError as err:
            raise Fail(f"tensorizing a matmul with your intrinsic failed: {err}",
                       "index B as B[i, k] (lane i, product k), as a matmul's B[j, k] is "
                       "read") from None
    return "desc computes what the instruction computes, and a matmul tensorizes with it"


# --- 08.tensorize_matmul ------------------------------------------------------------------------
@exercise("08.tensorize_matmul", points=2, answer="tensorize_matmul",
          title="Tensorize a matmul with the AVX2 dot product")
def _check_tensorize_matmul(answer, rng):
    from ..runtime import build
    from ..schedule import Schedule
    from ..tir.expr import TensorCall
    from ..tir.functor import post_order_visit
    from ..tir.interpreter import interpret
    from ..tir.transform import lower
    shapes = [(int(rng.integers(2, 4)), 8 * int(rng.integers(1, 3)), 4 * int(rng.integers(1, 3)))]
    if _host_has_avx2():
        shapes.append((int(rng.integers(8, 17)), 8 * int(rng.integers(3, 7)),
                       4 * int(rng.integers(8, 17))))
    for k_, (m, n, k) in enumerate(shapes):
        with trial(f"an int8 matmul m={m}, n={n}, k={k}"):
            func = int8_matmul(m, n, k)
            try:
                got = call(answer, "tensorize_matmul", func)
            except Fail as err:
                if "[MLC-" in err.message:
                    raise Fail(err.message, "split j by 8 and k by 4, put those two loops "
                               "innermost (j's inside k's outer loop), and tensorize at the "
                               "outer of the two") from None
                raise
            if not isinstance(got, Schedule):
                raise Fail(f"tensorize_matmul should return the Schedule, got "
                           f"{type(got).__name__}", "return sch itself, not sch.func",
                           about_inputs=False)
            got = got.func
            ops: list = []
            for f in lower(got).functions.values():
                post_order_visit(f.body, lambda e: ops.append(e.op)
                                 if isinstance(e, TensorCall) else None)
            if "x86.dot_u8i8.8x4" not in ops:
                raise Fail("the lowered program calls no dot-product instruction: no block is "
                           "tensorized with 'x86.avx2.dot_u8i8_8x4'",
                           "end with sch.tensorize(loop, 'x86.avx2.dot_u8i8_8x4')")
            a, b, _ = _int8_data(rng, (((m, k), ""), ((n, k), ""), ((m, n), "")), False)
            want = a.astype(np.int32) @ b.astype(np.int32).T
            out = np.zeros((m, n), np.int32)
            try:
                if k_ == 0:
                    interpret(got, a, b, out)
                else:
                    build(got)(a, b, out)
            except MLCError as err:
                raise Fail(f"the scheduled program does not run: {err}") from None
            if not np.array_equal(out, want):
                bad = np.argwhere(out != want)[0]
                raise Fail(f"C[{bad[0]}, {bad[1]}] = {out[tuple(bad)]}, expected "
                           f"{want[tuple(bad)]} ({'interpreted' if k_ == 0 else 'native'})")
    return "every block runs on the dot-product instruction and computes the matmul"


# --- 08.quantize_layer --------------------------------------------------------------------------
def _worst_error(x_scale: float, w_scale: np.ndarray, k: int) -> np.ndarray:
    """The largest |x . w - dequantized(xq . wq)| per output row: every activation just
    rounds up to 255, every weight to 127 (each error nearly half a step, all of one sign)."""
    x = np.full(k, (254.5 + 1e-3) * x_scale)
    out = []
    for s in w_scale:
        w = np.full(k, (126.5 + 1e-3) * s)
        xq, wq = np.rint(x / x_scale), np.rint(w / s)
        out.append(abs(float(x @ w) - float(xq @ wq) * x_scale * s))
    return np.array(out)


def _scale_ok(got, want) -> bool:
    return np.all(np.abs(np.asarray(got, np.float64) - want) <= 1e-3 * np.abs(want))


def _numbers(value):
    """``value`` as a float64 array when it is a list or tuple of numbers (n numbers may come
    as a list: only the integer arrays' dtypes are part of the answer), else unchanged."""
    if isinstance(value, (list, tuple)):
        try:
            return np.asarray(value, np.float64)
        except (TypeError, ValueError):
            return value
    return value


@exercise("08.quantize_layer", points=3, answer="quantize_layer",
          title="Quantize a layer and bound its error")
def _check_quantize_layer(answer, rng):
    m, k, n = int(rng.integers(2, 6)), 4 * int(rng.integers(8, 33)), int(rng.integers(3, 9))
    x = np.maximum(rng.standard_normal((m, k)), 0).astype(np.float32)
    w = (rng.standard_normal((n, k)) * rng.uniform(0.2, 2, (n, 1))).astype(np.float32)
    with trial(f"x of shape {x.shape} (>= 0), w of shape {w.shape}"):
        got = call(answer, "quantize_layer", x, w)
        if not isinstance(got, tuple) or len(got) != 5:
            raise Fail("quantize_layer should return (xq, x_scale, wq, w_scale, bound)")
        xq, x_scale, wq, w_scale, bound = got
        w_scale, bound = _numbers(w_scale), _numbers(bound)
        for nm, arr, dt, shape in (("xq", xq, np.uint8, x.shape), ("wq", wq, np.int8, w.shape),
                                   ("w_scale", w_scale, None, (n,)), ("bound", bound, None, (n,))):
            if not isinstance(arr, np.ndarray) or arr.shape != shape or (
                    dt is not None and arr.dtype != dt):
                raise Fail(f"{nm} should be an array of shape {shape}"
                           + (f" and dtype {np.dtype(dt).name}" if dt else "")
                           + f", got {type(arr).__name__} {getattr(arr, 'shape', '')} "
                             f"{getattr(arr, 'dtype', '')}")
        want_xs = float(x.max()) / 255
        want_ws = np.abs(w).max(axis=1).astype(np.float64) / 127
        if not np.isscalar(x_scale) and np.ndim(x_scale) != 0:
            raise Fail("x_scale should be one number (the whole activation tensor)")
        if not _scale_ok(x_scale, want_xs):
            raise Fail(f"x_scale is {float(x_scale):.6g}; [0, x.max()] over the 255 steps of "
                       f"uint8 gives {want_xs:.6g}",
                       "a larger scale wastes levels, a smaller one clips the largest inputs")
        if not _scale_ok(w_scale, want_ws):
            r = int(np.argmax(np.abs(w_scale - want_ws) > 1e-3 * want_ws))
            raise Fail(f"w_scale[{r}] is {float(w_scale[r]):.6g}; row {r}'s largest |w| over "
                       f"127 gives {want_ws[r]:.6g}", "one symmetric scale per output row")
        xs, ws = float(x_scale), np.asarray(w_scale, np.float64)
        if np.abs(xq * xs - x).max() > 0.5001 * xs or np.abs(
                wq * ws[:, None] - w).max() > 0.5001 * ws.max():
            raise Fail("a value is off by more than half a step after dequantizing",
                       "round to the nearest level (np.rint), do not truncate")
        bound = np.asarray(bound, np.float64)
        y = x.astype(np.float64) @ w.T.astype(np.float64)
        yq = (xq.astype(np.int64) @ wq.T.astype(np.int64)) * xs * ws[None, :]
        seen = np.abs(y - yq).max(axis=0)
        worst = _worst_error(xs, ws, k)
        for what, err in (("on these inputs", seen), ("on inputs near the top of the range, "
                                                      "all rounding one way", worst)):
            if np.any(err > bound * (1 + 1e-6)):
                r = int(np.argmax(err - bound))
                raise Fail(f"the error {what} reaches {err[r]:.4g} in output column {r}, "
                           f"above your bound {bound[r]:.4g}",
                           "each of the k products can be off by |x| * w_scale / 2 + |w| * "
                           "x_scale / 2 + x_scale * w_scale / 4; add them up")
        # The bound the text derives: each of the k products is off by at most
        # |x|max * |dw| + |w|max * |dx| + |dx| * |dw|, each rounding error half a step.
        derived = k * (float(x.max()) * ws / 2 + np.abs(w).max(axis=1) * xs / 2 + xs * ws / 4)
        if np.any(bound < derived * (1 - 1e-6)):
            r = int(np.argmax(derived - bound))
            raise Fail(f"bound[{r}] = {bound[r]:.6g} is below the worst case the rounding "
                       f"errors allow, {derived[r]:.6g}: a term is missing",
                       "(x + dx)(w + dw) - x w = x dw + w dx + dx dw: bound all three terms, "
                       "the product of the two errors too")
        if np.any(bound > 2 * worst):
            r = int(np.argmax(bound / worst))
            raise Fail(f"bound[{r}] = {bound[r]:.4g} is more than twice the worst error "
                       f"({worst[r]:.4g}): it says little", "bound each term's rounding error "
                       "by half a step, not more")
    return "scales fit the ranges, values round to nearest, and the bound holds and is tight"
