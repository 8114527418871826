"""Tensor calls as LLVM code: the ``op`` of each :class:`~mlcbook.tir.TensorCall` is an
emitter registered here with the CPU features its instructions need.

    @tensor_call("x86.vpdpbusd.16x4", features=("avx512vnni",))
    def _vnni(em, ptrs, strides):          # em: the function emitter; ptrs: tile origins
        ...                                 # strides: each buffer's element strides

:func:`check_features` runs before code generation: a call whose features the target lacks
is a :class:`~mlcbook.errors.MissingFeatureError` naming them, never a crash at run time.
The emitters below compute exactly what their ``desc`` says (integer sums never saturate;
float32 tiles use fused multiply-add and bf16 tiles ``vdpbf16ps``, which flushes denormals,
so they differ from ``desc`` by rounding only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

import llvmlite.ir as ir

from ..errors import BuildError, MissingFeatureError
from ..tir.expr import TensorCall
from ..tir.functor import post_order_visit
from ..tir.x86_intrinsics import ARM_VARIANTS, BF16_VARIANTS, FMA_KERNELS, TILE_COLS, \
    VNNI_VARIANTS, parse_tile_op, tile_features
from .llvm_types import I32, I64, mem_type


@dataclass(frozen=True)
class TensorCallOp:
    name: str
    emit: Callable
    features: tuple[str, ...]


TENSOR_CALLS: dict[str, TensorCallOp] = {}


def tensor_call(name: str, features=()) -> Callable[[Callable], Callable]:
    """Register ``emit(em, ptrs, strides)`` as the code of tensor call ``name``."""

    def register(fn: Callable) -> Callable:
        TENSOR_CALLS[name] = TensorCallOp(name, fn, tuple(features))
        return fn

    return register


def lookup(name: str) -> TensorCallOp:
    tile = parse_tile_op(name) if name not in TENSOR_CALLS else None
    if tile is not None:
        emit = _tile_dot(tile) if tile.variant in {**VNNI_VARIANTS, **BF16_VARIANTS,
                                                   **ARM_VARIANTS} else \
            _TILE_EMITTERS[tile.variant](tile.rows, tile.depth)
        tensor_call(name, tile_features(tile.variant))(emit)
    try:
        return TENSOR_CALLS[name]
    except KeyError:
        raise BuildError(f"no code generation for tensor call {name!r}; known: "
                         f"{', '.join(sorted(TENSOR_CALLS))}. Instead: register an emitter "
                         "with mlcbook.codegen.tensor_calls.tensor_call") from None


def _calls(mod):
    for func in mod.functions.values():
        body = getattr(func, "body", None)
        calls: list = []
        if body is not None:
            post_order_visit(body, lambda n: calls.append(n) if isinstance(n, TensorCall) else None)
        for c in calls:
            yield func, c


def _missing(mod, target):
    for func, c in _calls(mod):
        missing = [f for f in lookup(c.op).features if not target.has_feature(f)]
        if missing:
            return func, c, missing
    return None


def check_features(mod, target) -> None:
    """Raise MissingFeatureError if a tensor call in ``mod`` needs a feature ``target`` lacks."""
    found = _missing(mod, target)
    if found:
        func, c, missing = found
        raise MissingFeatureError(
            f"{func.name} uses the tensor intrinsic call {c.op!r}, whose instructions need the "
            f"CPU feature(s) {', '.join(missing)}, which target {target} does not have. "
            "Instead: tensorize with an intrinsic from mb.tir.TensorIntrin.available(target), "
            "or build for a CPU that has them (e.g. mb.Target('llvm -mcpu=znver4')) to read "
            "the assembly")


def host_cannot_run(mod, target, host) -> str | None:
    """Why code of ``mod`` built for ``target`` cannot run on this machine (``host``, its
    Target), or None: a tensor call needs a feature the host CPU lacks."""
    if not target.is_host:
        return None
    found = _missing(mod, host)
    if not found:
        return None
    func, c, missing = found
    return (f"{func.name} was built for {target} and uses {c.op!r}, which needs the CPU "
            f"feature(s) {', '.join(missing)}; this machine ({host.cpu}) does not have them, so "
            "the kernel can show its .asm() but not run here. Instead: tensorize with an "
            "intrinsic from mb.tir.TensorIntrin.available(mb.Target()) to run it here")


def emit_tensor_call(em, e: TensorCall) -> None:
    """Emit ``e`` with function emitter ``em`` (its args are flattened loads)."""
    op = lookup(e.op)
    if em.lanes is not None:
        raise BuildError(f"tensor call {e.op!r} is inside a vectorized loop, but it is vector "
                         "code already. Instead: do not vectorize the loops around a "
                         "tensorized block (parallelize or unroll them)")
    ptrs = []
    for a in e.args:
        idx = em.expr(a.indices[0])
        # elements as stored: a bfloat16 is 2 bytes in memory (a float in registers)
        ptrs.append(em.b.gep(em.buffers[a.buffer], [idx.value],
                             source_etype=mem_type(a.buffer.dtype), inbounds=True))
    op.emit(em, ptrs, e.strides)


# --- helpers ------------------------------------------------------------------------------------
def _vec(n: int, t) -> ir.VectorType:
    return ir.VectorType(t, n)


def _at(em, ptr, offset: int, t):
    """Pointer ``offset`` elements of type ``t`` after ``ptr``."""
    if not offset:
        return ptr
    return em.b.gep(ptr, [ir.Constant(I32, offset)], source_etype=t, inbounds=True)


def _splat(em, x, n: int):
    B = em.b
    v = B.insert_element(ir.Constant(_vec(n, x.type), ir.Undefined), x, ir.Constant(I32, 0))
    zeros = ir.Constant(_vec(n, I32), [0] * n)
    return B.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), zeros)


def _call(em, name: str, ret, args):
    fn = em.cg.declare(name, ir.FunctionType(ret, [a.type for a in args]))
    return em.b.call(fn, args)


def _rows_of_4_bytes(em, ptr, rows: int, stride: int):
    """``rows`` groups of 4 int8 (each ``stride`` bytes apart) as one ``<rows x i32>``."""
    B, i8 = em.b, ir.IntType(8)
    if stride == 4:
        return B.load(ptr, typ=_vec(rows, I32), align=1)
    v = ir.Constant(_vec(rows, I32), ir.Undefined)
    for r in range(rows):
        v = B.insert_element(v, B.load(_at(em, ptr, r * stride, i8), typ=I32, align=1),
                             ir.Constant(I32, r))
    return v


def _dot_u8i8(lanes: int):
    """C[i] += sum_k u8 A[k] * i8 B[i, k] for i < lanes, k < 4 (desc of the dot intrinsics)."""

    def load(em, ptrs, strides):
        a, b, c = ptrs
        B = em.b
        if strides[2][-1] != 1 or strides[1][-1] != 1 or strides[0][-1] != 1:
            raise BuildError("the int8 dot-product tiles must be contiguous in their last "
                             "dimension; Instead: transform_layout so that k is innermost")
        acc = B.load(c, typ=_vec(lanes, I32), align=4)
        a4 = _splat(em, B.load(a, typ=I32, align=1), lanes)
        b4 = _rows_of_4_bytes(em, b, lanes, strides[1][0])
        return acc, a4, b4

    return load


@tensor_call("x86.dot_u8i8.8x4", features=("avx2",))
def _dot_avx2(em, ptrs, strides):
    """AVX2 has no exact u8 x i8 -> i32 dot instruction (vpmaddubsw adds pairs in int16
    with saturation), so widen both to int16, where every product fits, and let
    ``vpmaddwd`` add pairs of products into int32; then add neighbouring pairs."""
    acc, a4, b4 = _dot_u8i8(8)(em, ptrs, strides)
    B, i8, i16 = em.b, ir.IntType(8), ir.IntType(16)
    a = B.zext(B.bitcast(a4, _vec(32, i8)), _vec(32, i16))
    b = B.sext(B.bitcast(b4, _vec(32, i8)), _vec(32, i16))
    undef16 = ir.Constant(a.type, ir.Undefined)
    halves = []
    for h in range(2):   # rows 0-3, then rows 4-7
        picks = ir.Constant(_vec(16, I32), list(range(16 * h, 16 * h + 16)))
        halves.append(_call(em, "llvm.x86.avx2.pmadd.wd", _vec(8, I32), [
            B.shuffle_vector(a, undef16, picks), B.shuffle_vector(b, undef16, picks)]))
    pairs = B.shuffle_vector(halves[0], halves[1], ir.Constant(_vec(16, I32), list(range(16))))
    undef = ir.Constant(pairs.type, ir.Undefined)
    even = B.shuffle_vector(pairs, undef, ir.Constant(_vec(8, I32), list(range(0, 16, 2))))
    odd = B.shuffle_vector(pairs, undef, ir.Constant(_vec(8, I32), list(range(1, 16, 2))))
    B.store(B.add(acc, B.add(even, odd)), ptrs[2], align=4)


@tensor_call("x86.vpdpbusd.16x4", features=("avx512vnni", "avx512f"))
def _dot_vnni(em, ptrs, strides):
    """One ``vpdpbusd``: 16 lanes of four u8 x i8 products added to int32 (no saturation)."""
    acc, a4, b4 = _dot_u8i8(16)(em, ptrs, strides)
    out = _call(em, "llvm.x86.avx512.vpdpbusd.512", acc.type, [acc, a4, b4])
    em.b.store(out, ptrs[2], align=4)


def _fma_tile(lanes: int, rows: int, cols: int, depth: int):
    """C[i, j] += A[i, k] * B[k, j] over a rows x cols register tile, depth steps of k:
    each step broadcasts one A value per row and does one FMA per vector of the row."""

    def emit(em, ptrs, strides):
        a, b, c = ptrs
        B, f32 = em.b, ir.FloatType()
        if strides[1][1] != 1 or strides[2][1] != 1:
            raise BuildError("the fp32 micro-kernel needs B and C rows contiguous")
        vt, nv = _vec(lanes, f32), cols // lanes
        acc = [[B.load(_at(em, c, i * strides[2][0] + v * lanes, f32), typ=vt, align=4)
                for v in range(nv)] for i in range(rows)]
        for k in range(depth):
            bv = [B.load(_at(em, b, k * strides[1][0] + v * lanes, f32), typ=vt, align=4)
                  for v in range(nv)]
            for i in range(rows):
                x = B.load(_at(em, a, i * strides[0][0] + k * strides[0][1], f32), typ=f32,
                           align=4)
                av = _splat(em, x, lanes)
                for v in range(nv):
                    acc[i][v] = _call(em, f"llvm.fma.v{lanes}f32", vt, [av, bv[v], acc[i][v]])
        for i in range(rows):
            for v in range(nv):
                B.store(acc[i][v], _at(em, c, i * strides[2][0] + v * lanes, f32), align=4)

    return emit


def _tile_strides(strides):
    """Check the strides of a u8i8 tile call; return (A row stride, B group stride,
    C row stride) in elements."""
    (sa, sb, sc) = strides
    if sa[-1] != 1 or sb[-2:] != (4, 1) or sc[-1] != 1:
        raise BuildError("the int8 tile kernels read A rows with k innermost, B as packed "
                         "16 x 4 tiles and C rows contiguous; got strides "
                         f"{sa}, {sb}, {sc}. Instead: pack the weights with pack_int8")
    return sa[0], sb[0], sc[0]


def _tile_sums(em, c, cs: int, rows: int):
    """The int32 sums of a rows x 16 tile of C, two ``<8 x i32>`` per row."""
    return [[em.b.load(_at(em, c, r * cs + h * 8, I32), typ=_vec(8, I32), align=4)
             for h in range(TILE_COLS // 8)] for r in range(rows)]


def _store_tile(em, c, cs: int, acc) -> None:
    for r, row in enumerate(acc):
        for h, v in enumerate(row):
            em.b.store(v, _at(em, c, r * cs + h * 8, I32), align=4)


def _tile_pmaddubsw(rows: int, depth: int):
    """Per group of 4 terms: the 16 x 4 weight tile as two ``<32 x i8>`` (8 columns each),
    each row's 4 activations broadcast to all 8 columns; ``vpmaddubsw`` sums the two
    pairs of u8 x s8 products in int16 (saturating: see ``pairs_fit_int16``) and
    ``vpmaddwd`` by ones adds the pairs into the int32 sums held in registers."""

    def emit(em, ptrs, strides):
        a, b, c = ptrs
        sa, sb, sc = _tile_strides(strides)
        B, i8, i16 = em.b, ir.IntType(8), ir.IntType(16)
        ones = ir.Constant(_vec(16, i16), [1] * 16)
        acc = _tile_sums(em, c, sc, rows)
        for d in range(depth):
            w = [B.load(_at(em, b, d * sb + h * 32, i8), typ=_vec(32, i8), align=1)
                 for h in range(2)]
            for r in range(rows):
                x = B.load(_at(em, a, r * sa + d * 4, i8), typ=I32, align=1)
                x = B.bitcast(_splat(em, x, 8), _vec(32, i8))
                for h in range(2):
                    p = _call(em, "llvm.x86.avx2.pmadd.ub.sw", _vec(16, i16), [x, w[h]])
                    acc[r][h] = B.add(acc[r][h], _call(em, "llvm.x86.avx2.pmadd.wd",
                                                       _vec(8, I32), [p, ones]))
        _store_tile(em, c, sc, acc)

    return emit


def _tile_pmaddwd(rows: int, depth: int):
    """Per group of 4 terms: the weight tile sign-extended to int16, four ``<16 x i16>``
    of 4 columns x 4 terms; each row's 4 activations zero-extended and broadcast to the 4
    columns; ``vpmaddwd`` gives one int32 per (column, pair of terms), kept as pairs in
    registers over the depth and added into columns once at the end."""

    def emit(em, ptrs, strides):
        a, b, c = ptrs
        sa, sb, sc = _tile_strides(strides)
        B, i8, i16, i64 = em.b, ir.IntType(8), ir.IntType(16), ir.IntType(64)
        zero = ir.Constant(_vec(8, I32), [0] * 8)
        pairs = [[zero] * 4 for _ in range(rows)]
        for d in range(depth):
            w = [B.sext(B.load(_at(em, b, d * sb + g * 16, i8), typ=_vec(16, i8), align=1),
                        _vec(16, i16)) for g in range(4)]
            for r in range(rows):
                x = B.load(_at(em, a, r * sa + d * 4, i8), typ=_vec(4, i8), align=1)
                x = B.bitcast(B.zext(x, _vec(4, i16)), i64)
                x = B.bitcast(_splat(em, x, 4), _vec(16, i16))
                for g in range(4):
                    pairs[r][g] = B.add(pairs[r][g], _call(
                        em, "llvm.x86.avx2.pmadd.wd", _vec(8, I32), [x, w[g]]))
        acc = _tile_sums(em, c, sc, rows)
        for r in range(rows):
            for h in range(2):   # columns 8h..8h+7: pairs in lanes (2 col, 2 col + 1)
                both = B.shuffle_vector(pairs[r][2 * h], pairs[r][2 * h + 1],
                                        ir.Constant(_vec(16, I32), list(range(16))))
                undef = ir.Constant(both.type, ir.Undefined)
                even = B.shuffle_vector(both, undef, ir.Constant(_vec(8, I32),
                                                                 list(range(0, 16, 2))))
                odd = B.shuffle_vector(both, undef, ir.Constant(_vec(8, I32),
                                                                list(range(1, 16, 2))))
                acc[r][h] = B.add(acc[r][h], B.add(even, odd))
        _store_tile(em, c, sc, acc)

    return emit


#: groups of 4 terms per iteration of a VNNI tile's loop over the depth (its body: that
#: many rows x column tiles of vpdpbusd); a depth up to twice this is unrolled whole
DEPTH_UNROLL = 4


def _counted(em, count: int, body, carried=()):
    """``carried = body(i, carried)`` for ``i`` in ``range(count)``: an LLVM loop when
    ``count > 1`` (``i`` an i64 value, the carried values phis), else inline (``i`` the
    int 0). Returns the carried values after the last iteration."""
    carried = list(carried)
    if count <= 1:
        return body(0, carried) if count == 1 else carried
    B = em.b
    pre = B.block
    loop, done = B.append_basic_block("tile.loop"), B.append_basic_block("tile.done")
    B.branch(loop)
    B.position_at_end(loop)
    i = B.phi(I64)
    i.add_incoming(ir.Constant(I64, 0), pre)
    phis = []
    for v in carried:
        phis.append(B.phi(v.type))
        phis[-1].add_incoming(v, pre)
    out = body(i, phis)
    nxt = B.add(i, ir.Constant(I64, 1), flags=("nsw",))
    end = B.block       # the body may have ended in a block of its own (an inner loop)
    i.add_incoming(nxt, end)
    for p, v in zip(phis, out):
        p.add_incoming(v, end)
    B.cbranch(B.icmp_signed("<", nxt, ir.Constant(I64, count)), loop, done)
    B.position_at_end(done)
    return out


def _times(em, i, scale: int, plus: int = 0):
    """``i * scale + plus`` for ``i`` an int or an i64 value."""
    if isinstance(i, int):
        return i * scale + plus
    v = em.b.mul(i, ir.Constant(I64, scale), flags=("nsw",))
    return em.b.add(v, ir.Constant(I64, plus), flags=("nsw",)) if plus else v


def _offset(em, ptr, t, *terms):
    """``ptr`` advanced by the sum of ``value * scale`` elements of type ``t``, each value
    an int or an i64 value (known parts folded here, the rest left to LLVM)."""
    B, const, total = em.b, 0, None
    for v, scale in terms:
        if isinstance(v, int):
            const += v * scale
        else:
            part = B.mul(v, ir.Constant(I64, scale), flags=("nsw",)) if scale != 1 else v
            total = part if total is None else B.add(total, part, flags=("nsw",))
    if const:
        total = ir.Constant(I64, const) if total is None else B.add(total, ir.Constant(
            I64, const), flags=("nsw",))
    if total is None:
        return ptr
    return B.gep(ptr, [total], source_etype=t, inbounds=True)


class _BFloat(ir.Type):
    """LLVM's ``bfloat`` (llvmlite has no class for it): the operand element type of the
    AVX-512 BF16 intrinsics since LLVM 17 (before, ``i16``; llvmlite >= 0.45 is LLVM 20)."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash(_BFloat)


class _DotKind(NamedTuple):
    """How one family of register-tiled dot kernels reads memory: ``fn`` the intrinsic,
    ``acc`` the 32-bit sum type, ``operand`` the vector type its two inputs are bitcast to
    (None: ``<lanes x i32>`` as loaded), ``elem`` the type of one A / B element in memory,
    ``terms`` the elements of one group (4 bytes: one i32 broadcast per row), and whether C
    has a blocks axis (int8's (rows, blocks, 16)) or is the (rows, 16 x blocks) matrix;
    ``signed``: the instruction multiplies int8 by int8 (Arm's ``sdot``), so each uint8
    activation goes in as ``a - 128`` and 128 x each column's weight sum is added back."""

    fn: str
    acc: ir.Type
    operand: ir.Type | None
    elem: ir.Type
    terms: int
    blocks_axis: bool
    signed: bool = False


def _dot_kind(variant: str) -> tuple[int, _DotKind]:
    """(register bits, :class:`_DotKind`) of a VNNI, BF16 or Arm tile variant."""
    if variant in ARM_VARIANTS:
        bits = ARM_VARIANTS[variant][0]
        return bits, _DotKind(f"llvm.aarch64.neon.{variant}.v4i32.v16i8", I32,
                              _vec(16, ir.IntType(8)), ir.IntType(8), 4, True, True)
    if variant in BF16_VARIANTS:
        bits = BF16_VARIANTS[variant][0]
        return bits, _DotKind(f"llvm.x86.avx512bf16.dpbf16ps.{bits}", ir.FloatType(),
                              _vec(bits // 16, _BFloat()), ir.IntType(16), 2, False)
    bits = VNNI_VARIANTS[variant][0]   # the VEX form (AVX-VNNI) is the same intrinsic
    return bits, _DotKind(f"llvm.x86.avx512.vpdpbusd.{bits}", I32, None, ir.IntType(8), 4,
                          True)


def _tile_dot(op):
    """C[i, b, j] += sum over d, k of A[i, T d + k] * B[b, d, j, k] with one dot instruction
    per (row, weight vector, group of T terms): ``vpdpbusd`` (u8 x i8, T = 4, int32 sums),
    ``vdpbf16ps`` (bf16 x bf16, T = 2, float32 sums; C the (rows, 16 x blocks) matrix) or
    Arm's ``sdot`` (i8 x i8: activations shifted by -128, one more ``sdot`` per weight
    vector sums its columns against ones, 128 x which is added back at the end).
    A register tile of ``tile_rows`` x ``tile_blocks`` column tiles keeps its sums in
    registers over the whole depth, each row's group of terms (4 bytes) broadcast once per
    group and used against every weight vector of the group. Whole register tiles run in a
    loop; the rows and column tiles left over get a smaller tile of the same code."""
    bits, kind = _dot_kind(op.variant)
    lanes = bits // 32
    per = TILE_COLS // lanes                   # registers per 16-column tile
    fn, T = kind.fn, kind.terms

    def emit(em, ptrs, strides):
        a, b, c = ptrs
        (sa, sb, sc) = strides
        if sa[-1] != 1 or sb[-3:] != (TILE_COLS * T, T, 1) or sc[-1] != 1:
            raise BuildError(f"the {op.variant} tile reads A rows with k innermost, B as "
                             f"packed 16 x {T} tiles and C rows contiguous; got strides "
                             f"{sa}, {sb}, {sc}. Instead: pack the weights with "
                             f"{'pack_bf16' if T == 2 else 'pack_int8'}")
        Bd, el, vt, at = em.b, kind.elem, _vec(lanes, I32), _vec(lanes, kind.acc)
        # C's step from one 16-column tile to the next, in elements
        c_block = sc[1] if kind.blocks_axis else TILE_COLS

        def operand(v):
            return v if kind.operand is None else Bd.bitcast(v, kind.operand)

        def tile(r0, nr, b0, nb):
            """One register tile: rows r0.. (nr of them) x column tiles b0.. (nb)."""
            ap = _offset(em, a, el, (r0, sa[0]))
            bp = _offset(em, b, el, (b0, sb[0]))
            cp = _offset(em, c, kind.acc, (r0, sc[0]), (b0, c_block))
            where = [(r, v) for r in range(nr) for v in range(nb * per)]
            cptr = [_at(em, cp, r * sc[0] + (v // per) * c_block + (v % per) * lanes, kind.acc)
                    for r, v in where]
            acc = [Bd.load(p, typ=at, align=4) for p in cptr]
            sums = [ir.Constant(at, None)] * (nb * per if kind.signed else 0)

            def group(d, carried):
                w = [operand(Bd.load(_offset(em, bp, el, (d, sb[1]), ((v // per) * sb[0] + (
                    v % per) * lanes * T, 1)), typ=vt, align=1)) for v in range(nb * per)]
                out = list(carried)
                for r in range(nr):
                    x = Bd.load(_offset(em, ap, el, (d, T), (r * sa[0], 1)), typ=I32, align=1)
                    if kind.signed:    # each uint8 a as the int8 a - 128: its top bit flipped
                        x = Bd.xor(x, ir.Constant(I32, 0x80808080))
                    x = operand(_splat(em, x, lanes))
                    for v in range(nb * per):
                        k = r * nb * per + v
                        out[k] = _call(em, fn, at, [out[k], x, w[v]])
                ones = ir.Constant(kind.operand, [1] * (lanes * T)) if sums else None
                for v in range(len(sums)):
                    k = len(cptr) + v
                    out[k] = _call(em, fn, at, [out[k], ones, w[v]])
                return out

            def unrolled(i, acc):
                for u in range(DEPTH_UNROLL):
                    acc = group(_times(em, i, DEPTH_UNROLL, u), acc)
                return acc

            loops = op.depth // DEPTH_UNROLL if op.depth > 2 * DEPTH_UNROLL else 0
            acc = _counted(em, loops, unrolled, acc + sums)
            for d in range(loops * DEPTH_UNROLL, op.depth):
                acc = group(d, acc)
            if sums:           # sum((a - 128) w) + 128 sum(w) = sum(a w)
                fix = [Bd.shl(c, ir.Constant(at, [7] * lanes)) for c in acc[len(cptr):]]
                acc = [Bd.add(v, fix[k % len(fix)]) for k, v in enumerate(acc[:len(cptr)])]
            for p, v in zip(cptr, acc):
                Bd.store(v, p, align=4)

        def rows_of(r0, nr):
            tb = op.tile_blocks
            whole, rest = divmod(op.blocks, tb)
            _counted(em, whole, lambda h, _: tile(r0, nr, _times(em, h, tb), tb) or [])
            if rest:
                tile(r0, nr, whole * tb, rest)

        tr = op.tile_rows
        whole, rest = divmod(op.rows, tr)
        _counted(em, whole, lambda g, _: rows_of(_times(em, g, tr), tr) or [])
        if rest:
            rows_of(whole * tr, rest)

    return emit


_TILE_EMITTERS = {"pmaddubsw": _tile_pmaddubsw, "pmaddwd": _tile_pmaddwd}

for _name, (_lanes, _rows, _cols, _depth, _feats) in FMA_KERNELS.items():
    tensor_call(_name, _feats)(_fma_tile(_lanes, _rows, _cols, _depth))


__all__ = ["TENSOR_CALLS", "TensorCallOp", "tensor_call", "lookup", "check_features",
           "host_cannot_run", "emit_tensor_call"]
