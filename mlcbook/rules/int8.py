"""The int8 product rule: how a quantized model's ``int8_dense`` / ``int8_conv2d`` kernel
(:mod:`mlcbook.te.ops.int8_kernels`) is scheduled, its product stage tensorized with a
register-tiled kernel of :func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` whose shape comes
from the target's machine model, every decision a knob:

- with VNNI (``vpdpbusd`` on zmm with AVX-512 VNNI, on ymm with AVX-VNNI): knob ``tile``, a
  register tile of rows x column tiles of int32 sums kept in registers over the whole
  reduction, each row's 4 activations broadcast once per group of terms and used against
  every weight vector of the group (hint: :func:`int8_register_tile`, from the vector
  registers, their int32 lanes and the sums the instruction needs in flight; 4 rows x 4 zmm
  on AVX-512). Rows the tile does not divide run in the same call, with a smaller tile
  (:func:`row_chunk`), so every shape gets the kernel;
- on 64-bit Arm with dotprod: the same register tile of ``sdot`` (knob ``tile``; the
  kernel reads the uint8 activations as int8 minus 128 and adds the weights' share back);
- with AVX2 only: knobs ``rows`` (up to 4), ``depth`` (groups of 4 terms per call) and
  ``cols`` (column tiles sharing a panel of weights from L2) of the ``pmaddubsw`` (a stage
  named ``*_w7_int8_acc``, whose weights fit int16 pair sums) or ``pmaddwd`` kernel;
- knob ``epilogue``: a channels-last conv's requantizing epilogue under each row tile, while
  its sums are in cache (one that pools, under the rows of sums each output row reads);
  knob ``parallel`` for each stage.

The whole kernel (its padding and epilogue stages too) is the rule's: the dispatcher
(:class:`~mlcbook.rules.Rules`) hands it any function with an int8 product stage.

    >>> schedule_int8_kernel(int8_matmul_tiled(50, 1024, 1024), "llvm -mcpu=znver5")
    # tensor_intrin "x86.avx512vnni.u8i8_vpdpbusd512_50x64x1024_4x64": 12 tiles of 4 rows
    # x 64 columns, then one of 2 rows
"""

from __future__ import annotations

import math

from ..codegen.target import Target
from ..errors import ScheduleError
from ..schedule import Schedule
from ..te.ops.int8_kernels import ACC_SUFFIX, NARROW_ACC_SUFFIX
from ..tir.arith import affine
from ..tir.expr import BufferLoad
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.x86_intrinsics import ARM_VARIANTS, TILE_VARIANTS, VNNI_VARIANTS, register_tile, \
    register_tiles, u8i8_tile
from .blocks import extent, root_realizes
from .knobs import Knobs
from .spatial import PARALLEL_WORK

#: the most groups of 4 terms one AVX2 register-tiled call sums (its code is unrolled)
MAX_TILE_DEPTH = 16
#: the most register tiles of rows one VNNI call covers when the tile's rows do not divide
#: the row loop (see :func:`row_chunk`)
ROW_CHUNK = 16
#: the share of the target's L2 that sizes the cache-bound choices (:func:`l2_budget`):
#: half, for the weights or sums beside the activations streaming through. On Zen 3 (512
#: KiB of L2): a channels-last conv with 8 channels over 8 x 28 x 28 pixels (400 KiB of
#: sums) ran 20% faster with each tile of sums requantized at once, one with 100 KiB of
#: sums 10% slower; panels of 16 x 16 weight columns of a 1024-term product (256 KiB)
L2_SHARE = 0.5
#: a copy or epilogue stage in parallel runs its outer loops fused until they make this many
#: iterations, the inner ones nested: fusing them all cost the 14x14 conv over 8 channels'
#: copy (1792 pixels of 24 bytes) 2.4 us of index arithmetic at 1 thread on Zen 5, where
#: (n, y) fused took 0.4 us more than the serial copy
PARALLEL_CHUNKS = 64
#: with VNNI, a channels-last conv whose sums have fewer terms than this requantizes each
#: row tile of them at once, whatever their size: on Zen 5, the QDQ CNN's convs over 1 and
#: 8 channels (12 and 72 terms a sum) ran 20% and 15% faster so, one over 16 channels (144
#: terms) and the larger ones of a ResNet within 3% either way (the AVX2 kernel, whose tile
#: holds one column block, gained nothing and lost 28% on a 7x7 conv over 512 channels)
SHORT_SUM_TERMS = 128


def l2_budget(target=None) -> int:
    """Bytes of ``target``'s L2 (``Target.machine.l2_bytes``) the int8 schedules plan to
    fill: a channels-last conv whose int32 sums take more requantizes each tile of them at
    once; the AVX2 kernel visits at most this many bytes of weights per row tile.

        >>> l2_budget("llvm -mcpu=znver3")     # half of Zen 3's 512 KiB
        262144
    """
    return int(Target(target or "llvm").machine.l2_bytes * L2_SHARE)



def int8_acc_blocks(func: PrimFunc) -> list[str]:
    """Names of the root blocks of ``func`` that are an int8 kernel's packed product."""
    return [name for name in _root_block_names(func) if name.endswith(ACC_SUFFIX)]


def _root_block_names(func: PrimFunc) -> list[str]:
    return [r.block.name for r in root_realizes(func)]


def int8_tile_variant(target=None, narrow: bool = False) -> str | None:
    """The :func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` variant of ``target``'s int8
    kernels: ``vpdpbusd`` on the widest registers the target's machine model has it for
    (zmm with AVX-512 VNNI, ymm with AVX-VNNI), else with AVX2 the ``pmaddubsw`` kernel
    for ``narrow`` weights and ``pmaddwd`` for the others; on 64-bit Arm with dotprod,
    ``sdot``; None otherwise.

        >>> int8_tile_variant("llvm -mcpu=znver5"), int8_tile_variant("llvm -mcpu=znver3")
        ('vpdpbusd512', 'pmaddwd')
        >>> int8_tile_variant("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")
        'sdot'
    """
    t = Target(target or "llvm")
    if t.arch == "aarch64":
        dot = t.machine.dot_product("s8s8")
        return dot.instruction if dot is not None and dot.instruction in ARM_VARIANTS else None
    dot = t.machine.dot_product("u8i8")
    if dot is not None and f"{dot.instruction}{dot.bits}" in VNNI_VARIANTS:
        return f"{dot.instruction}{dot.bits}"
    if t.has_feature("avx2"):
        return "pmaddubsw" if narrow else "pmaddwd"
    return None


def dot_chains(target=None, kind: str = "u8i8") -> int:
    """How many independent sums ``target``'s ``kind`` dot instruction (``"u8i8"``,
    ``"bf16"``) needs in flight to start one every time it can: its latency times how many
    start per cycle (``Target.machine.dot_product(kind)``; 1 without one).

        >>> dot_chains("llvm -mcpu=znver5"), dot_chains("llvm -mcpu=cascadelake")
        (8, 10)
        >>> dot_chains("llvm -mcpu=znver5", "bf16")
        12
    """
    dot = Target(target or "llvm").machine.dot_product(kind)
    return 1 if dot is None else max(1, math.ceil(dot.latency * dot.per_cycle))


def int8_register_tile(target=None, blocks: int = 64, most_rows: int = 16) -> tuple[int, int]:
    """``(rows, column tiles of 16)`` of the VNNI register tile for ``target``, over
    ``blocks`` packed column tiles and ``most_rows`` rows:
    :func:`~mlcbook.tir.x86_intrinsics.register_tile` of the target's vector registers,
    the int32 lanes of its dot instruction and :func:`dot_chains`.

        >>> int8_register_tile("llvm -mcpu=znver5")                  # 16 zmm of sums
        (4, 4)
        >>> int8_register_tile("llvm -mcpu=x86-64-v3 -mattr=+avx2,+avxvnni")   # 8 ymm
        (4, 1)
        >>> int8_register_tile("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")  # sdot
        (4, 1)
    """
    t = Target(target or "llvm")
    if int8_tile_variant(t) not in ARM_VARIANTS:
        return dot_register_tile(t, "u8i8", blocks, most_rows)
    m = t.machine
    return register_tile(m.vector_registers, _dot_lanes(m, "s8s8"), dot_chains(t, "s8s8"),
                         blocks, most_rows, column_sums=True)


def dot_register_tile(target=None, kind: str = "u8i8", blocks: int = 64,
                      most_rows: int = 16) -> tuple[int, int]:
    """``(rows, column tiles of 16)`` of the register tile of ``target``'s ``kind`` dot
    instruction (``"u8i8"``, ``"bf16"``): :func:`~mlcbook.tir.x86_intrinsics.register_tile`
    of its vector registers, the instruction's 32-bit lanes and :func:`dot_chains`.

        >>> dot_register_tile("llvm -mcpu=znver5", "bf16")
        (4, 4)
    """
    m = Target(target or "llvm").machine
    return register_tile(m.vector_registers, _dot_lanes(m, kind), dot_chains(target, kind),
                         blocks, most_rows)


def _dot_lanes(m, kind: str) -> int:
    """32-bit lanes of machine ``m``'s ``kind`` dot instruction (its int32 lanes without)."""
    dot = m.dot_product(kind)
    return dot.lanes if dot is not None else m.lanes("int32")


def row_chunk(rows: int, tile_rows: int) -> int:
    """Rows of one VNNI tile call over a row loop of ``rows``: the register tile's rows when
    they divide it, else the largest divisor of ``rows`` up to ``ROW_CHUNK`` register tiles
    (the call runs whole tiles, then one smaller tile for the rest), or all ``rows`` when
    no divisor reaches a whole tile.

        >>> row_chunk(1024, 4), row_chunk(50, 4), row_chunk(7, 4), row_chunk(1031, 4)
        (4, 50, 7, 1031)
    """
    if rows % tile_rows == 0:
        return tile_rows
    best = max(d for d in range(1, min(rows, ROW_CHUNK * tile_rows) + 1) if rows % d == 0)
    return best if best >= tile_rows else rows


def schedule_int8_kernel(func: PrimFunc, target=None, parallel_work: int = 1 << 20,
                         epilogue_tile_bytes: int | None = None) -> PrimFunc:
    """``func`` (an ``int8_dense`` / ``int8_conv2d`` kernel) with every knob of the int8 rule
    at its hint (:func:`schedule_int8`): the product stage tensorized with the register tile
    of :func:`int8_tile_variant` (a ``ScheduleError`` if the target has none), the other
    stages (padding, the requantizing epilogue) vectorized along their last axis; rows in
    parallel when a stage has at least ``parallel_work`` inner iterations (waking the pool's
    workers costs more than a small stage). A channels-last conv whose int32 sums take more
    than ``epilogue_tile_bytes`` (default: :func:`l2_budget`), or with VNNI has fewer than
    :data:`SHORT_SUM_TERMS` terms a sum, requantizes each row tile of sums right after the
    product has summed it."""
    sch = Schedule(func)
    schedule_int8(Knobs.defaults(sch), Target(target or "llvm"), parallel_work,
                  epilogue_tile_bytes)
    return sch.func


def int8_rule(knobs: Knobs, name: str, rules) -> None:
    """The int8 rule as the dispatcher calls it: the whole kernel of ``knobs.sch``."""
    schedule_int8(knobs, rules.target, PARALLEL_WORK)


def schedule_int8(knobs: Knobs, target: Target, parallel_work: int = PARALLEL_WORK,
                  epilogue_tile_bytes: int | None = None) -> None:
    """Schedule every stage of the int8 kernel of ``knobs.sch`` (see the module docstring)."""
    sch, t = knobs.sch, target
    if epilogue_tile_bytes is None:
        epilogue_tile_bytes = l2_budget(t)
    if int8_tile_variant(t) is None:
        raise ScheduleError(f"the int8 kernel {sch.func.name!r} needs an int8 dot-product "
                            f"instruction, and target {t} has none (AVX2, AVX-VNNI or "
                            "AVX-512 VNNI on x86-64; sdot, of the dotprod feature, on 64-bit "
                            "Arm). Instead: compile the quantized model with opt_level=0, "
                            "which keeps its float QDQ form, or for a target with one (e.g. "
                            "'llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod', or an x86-64 "
                            "target with AVX2)")
    names = _root_block_names(sch.func)
    placed = set()
    for k, name in enumerate(names):
        if name in placed:
            continue
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        work = math.prod(extent(sch, lp) for lp in loops)
        parallel = knobs.choice(f"{name}.parallel", [0, 1], hint=int(work >= parallel_work))
        if not name.endswith(ACC_SUFFIX):
            _vectorize_rows(sch, loops, parallel)
            continue
        variant = int8_tile_variant(t, name.endswith(NARROW_ACC_SUFFIX))
        after = names[k + 1] if k + 1 < len(names) else None
        rows = None
        if after is not None:
            rows = _tile_epilogue(sch.get(block), sch.get(sch.get_block(after)),
                                  epilogue_tile_bytes, variant in VNNI_VARIANTS)
            if not knobs.choice(f"{name}.epilogue", [0, 1], hint=int(rows is not None)) or \
                    rows is None:
                after = None
        epilogue = (sch.get_block(after), rows) if after else None
        if variant in VNNI_VARIANTS or variant in ARM_VARIANTS:
            _vnni_product(knobs, block, variant, t, parallel, epilogue)
        else:
            _tile_product(knobs, block, variant, l2_budget(t), parallel, epilogue)
        placed.update([after] if after else [])


def _tile_epilogue(acc, epilogue, most_bytes: int, short_sums: bool) -> int | None:
    """Where ``epilogue`` (the block after the product ``acc``) should requantize the sums:
    0 under each row tile as soon as it is done, ``ph`` under every ``ph`` rows of sums, None
    in a pass of its own. A channels-last conv's epilogue folds (its output (N, OH, OW, F)
    indexed like the sums (N, OH, OW, F16 // 16, 16): under row tiles; pooled, each output row
    reading the next ``ph`` rows of sums: under rows) when its sums take more than
    ``most_bytes``, so would not stay in cache, or, with ``short_sums``, are sums of fewer
    than :data:`SHORT_SUM_TERMS` terms each, which cost less to compute than to store and
    read again; the others run as fast as one pass over all the sums."""
    sums, out = acc.writes[0].buffer, epilogue.writes[0].buffer
    terms = math.prod(iv.extent.value for iv in acc.iter_vars if iv.kind == "reduce")
    if len(sums.shape) != 5 or len(out.shape) != 4 or out.shape[0] != sums.shape[0] or \
            out.shape[3] > sums.shape[3] * sums.shape[4] or not (
                math.prod(sums.shape) * 4 > most_bytes or
                (short_sums and terms < SHORT_SUM_TERMS)):
        return None
    if tuple(out.shape[1:3]) == tuple(sums.shape[1:3]):
        return 0
    rows = _rows_per_output_row(epilogue, sums)
    return rows if rows and out.shape[1] * rows == sums.shape[1] else None


def _rows_per_output_row(epilogue, sums) -> int | None:
    """The step of the sums' row index per output row in a pooling ``epilogue``."""
    var, steps = epilogue.iter_vars[1].var, set()

    def visit(n):
        if isinstance(n, BufferLoad) and n.buffer.name == sums.name:
            a = affine(n.indices[1])
            steps.add(None if a is None else a.coeffs.get(var))

    post_order_visit(epilogue.body, visit)
    return steps.pop() if len(steps) == 1 else None


def _product_loops(sch: Schedule, block):
    """The loops ``(outer, row, jo, ji, window, ko, ki)`` of an int8 product block: the
    batch-like loops, the row loop, the packed column tiles and their lanes, the window's
    reduce loops (a conv's taps), the groups of 4 terms and the 4 terms."""
    n_reduce = sum(iv.kind == "reduce" for iv in sch.get(block).iter_vars)
    loops = sch.get_loops(block)
    n_spatial = len(loops) - n_reduce
    return (loops[:n_spatial - 3], loops[n_spatial - 3], *loops[n_spatial - 2:n_spatial],
            loops[n_spatial:-2], loops[-2], loops[-1])


def _tile_product(knobs: Knobs, block, variant: str, panel_bytes: int, parallel: bool,
                  epilogue=None) -> None:
    """Loops ``(*outer, row, jo, ji, *window, ko, ki)`` ->
    ``(*outer, jo_o, row_o, jo_i, *window, ko_o, [row_i, ji, ko_i, ki])``, the bracket one
    AVX2 :func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` call: as many rows as divide the row
    loop (at most the variant's register budget; 1 when neighbouring rows' activations are
    not one row apart, which the tile cannot read) and the deepest ``ko`` tile up to
    ``MAX_TILE_DEPTH`` that divides it; ``jo_i`` the column tiles whose weights fit
    ``panel_bytes``. An ``epilogue`` ``(block, rows)`` goes under ``row_o`` (all columns
    inside it), or under every ``rows`` rows of sums (:func:`_tile_epilogue`), its channels
    vectorized: it requantizes each tile of sums while they are in cache."""
    sch = knobs.sch
    name = sch.get(block).name
    outer, row, jo, ji, window, ko, ki = _product_loops(sch, block)
    most = TILE_VARIANTS[variant] if _unit_row_step(sch.get(block), len(outer)) else 1
    outer = _split_pool_rows(sch, outer, epilogue)
    options = [r for r in range(1, most + 1) if extent(sch, row) % r == 0]
    rows = knobs.choice(f"{name}.rows", options, hint=max(options))
    options = [d for d in range(1, MAX_TILE_DEPTH + 1) if extent(sch, ko) % d == 0]
    depth = knobs.choice(f"{name}.depth", options, hint=max(options))
    terms = 4 * math.prod(extent(sch, lp) for lp in (*window, ko))
    most_cols = extent(sch, jo) if epilogue is not None else panel_bytes // (16 * terms)
    options = [c for c in range(1, extent(sch, jo) + 1) if extent(sch, jo) % c == 0]
    cols = knobs.choice(f"{name}.cols", options,
                        hint=max(c for c in options if c <= max(1, most_cols)))
    row_o, row_i = sch.split(row, [None, rows])
    ko_o, ko_i = sch.split(ko, [None, depth])
    jo_o, jo_i = sch.split(jo, [None, cols])
    sch.reorder(*outer, jo_o, row_o, jo_i, *window, ko_o, row_i, ji, ko_i, ki)
    sch.tensorize(row_i, u8i8_tile(variant, rows, depth).name)
    _place_epilogue(sch, epilogue, outer, row_o)
    if parallel:
        sch.parallel(sch.fuse(*_parallel_rows(outer, epilogue, (jo_o, row_o))))


def _vnni_product(knobs: Knobs, block, variant: str, target: Target, parallel: bool,
                  epilogue=None) -> None:
    """Loops ``(*outer, row, jo, ji, *window, ko, ki)`` ->
    ``(*outer, jo_o, row_o, *window, [row_i, jo_i, ji, ko, ki])``, the bracket one VNNI (or
    Arm ``sdot``) :func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` call summing the whole ``ko`` in
    registers. Its register tile comes from :func:`int8_register_tile` (its column tiles
    divide ``jo``: no column tail), its rows from :func:`row_chunk` (whole register tiles,
    then a smaller one for the rest; 1 row when neighbouring rows' activations are not one
    row apart). Rows run inside each group of column tiles, which keeps that group's
    weights in cache for all of them (rows outside: the 1024^3 product ran 10-15% slower on
    Zen 5). With an ``epilogue`` ``(block, rows)``, which needs every column of a row tile
    before it requantizes them, the column groups go inside ``row_o`` and the epilogue
    under it (or under every ``rows`` rows of sums, :func:`_tile_epilogue`)."""
    sch = knobs.sch
    outer, row, jo, ji, window, ko, ki = _product_loops(sch, block)
    unit = _unit_row_step(sch.get(block), len(outer))
    outer = _split_pool_rows(sch, outer, epilogue)
    most_rows = extent(sch, row) if unit else 1
    hint = int8_register_tile(target, extent(sch, jo), most_rows)
    m, arm = target.machine, variant in ARM_VARIANTS
    options = register_tiles(m.vector_registers, _dot_lanes(m, "s8s8" if arm else "u8i8"),
                             extent(sch, jo), most_rows, column_sums=arm) or [hint]
    tile = knobs.choice(f"{sch.get(block).name}.tile", options, hint=hint)
    rows = row_chunk(extent(sch, row), tile[0]) if unit else 1
    row_o, row_i = sch.split(row, [None, rows])
    jo_o, jo_i = sch.split(jo, [None, tile[1]])
    first, second = (jo_o, row_o) if epilogue is None else (row_o, jo_o)
    sch.reorder(*outer, first, second, *window, row_i, jo_i, ji, ko, ki)
    sch.tensorize(row_i, u8i8_tile(variant, rows, extent(sch, ko), tile[1], tile).name)
    _place_epilogue(sch, epilogue, outer, row_o)
    if parallel:   # not into the column loop the epilogue sits beside
        sch.parallel(sch.fuse(*_parallel_rows(outer, epilogue, (first, second))))


def _split_pool_rows(sch: Schedule, outer, epilogue) -> tuple:
    """``outer`` with its last loop (the rows of sums) split by the rows of sums each row of
    a pooling ``epilogue`` reads, ``(..., y_o, y_i)``; unchanged for any other."""
    if epilogue is None or not epilogue[1]:
        return tuple(outer)
    return (*outer[:-1], *sch.split(outer[-1], [None, epilogue[1]]))


def _place_epilogue(sch: Schedule, epilogue, outer, row_o) -> None:
    """The ``epilogue`` under the product's row tile ``row_o``, or a pooling one under the
    rows of sums it reads (:func:`_split_pool_rows`), its channels vectorized."""
    if epilogue is None:
        return
    block, rows = epilogue
    sch.reverse_compute_at(block, outer[-2] if rows else row_o)
    sch.vectorize(sch.get_loops(block)[-1])


def _parallel_rows(outer, epilogue, inner) -> tuple:
    """The loops to run in parallel, fused: the outer ones, and with no epilogue both
    ``inner`` loops, with one under row tiles the first (not into the column loop the
    epilogue sits beside), with a pooling one none (each thread's rows of sums are the
    ones its epilogue reads)."""
    if epilogue is None:
        return (*outer, *inner)
    return (*outer, inner[0]) if not epilogue[1] else tuple(outer[:-1])


def _unit_row_step(block, k: int) -> bool:
    """Whether the uint8 activations the block reads move by one row per step of its
    ``k``-th iteration variable (a strided conv's move by the stride)."""
    var = block.iter_vars[k].var
    steps = []
    post_order_visit(block.body, lambda n: steps.append(affine(n.indices[-2])) if isinstance(
        n, BufferLoad) and n.buffer.dtype == "uint8" else None)
    return all(a is not None and a.coeffs.get(var, 0) == 1 for a in steps)


def _vectorize_rows(sch: Schedule, loops, parallel: bool) -> None:
    """Vectorize the last loop by 16 or 8 lanes when it splits evenly (an odd vector width
    makes slow code); if ``parallel``, run the fewest outer loops that make
    :data:`PARALLEL_CHUNKS` iterations in parallel, fused, the others nested inside."""
    last = loops[-1]
    lanes = next((w for w in (16, 8) if extent(sch, last) % w == 0), None)
    if lanes is not None and len(loops) > 1:
        if extent(sch, last) > lanes:
            _, last = sch.split(last, [None, lanes])
        sch.vectorize(last)
    if parallel and len(loops) > 1:
        depth = 1
        while depth < len(loops) - 1 and \
                math.prod(extent(sch, lp) for lp in loops[:depth]) < PARALLEL_CHUNKS:
            depth += 1
        sch.parallel(sch.fuse(*loops[:depth]) if depth > 1 else loops[0])


__all__ = ["schedule_int8_kernel", "schedule_int8", "int8_rule", "int8_acc_blocks",
           "int8_tile_variant", "dot_chains", "int8_register_tile", "dot_register_tile",
           "row_chunk", "l2_budget", "MAX_TILE_DEPTH", "ROW_CHUNK", "L2_SHARE", "SHORT_SUM_TERMS",
           "PARALLEL_CHUNKS"]
