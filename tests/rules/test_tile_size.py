"""Register tile sizes: within the vector registers, dividing the output where they can."""
import pytest

import mlcbook as mb
from mlcbook.rules.tile_size import (column_widths, pixel_tile, register_tile, row_tile,
                                     split_registers)

AVX2, AVX512 = "llvm -mcpu=znver3", "llvm -mcpu=skylake-avx512"


@pytest.mark.parametrize("target", [AVX2, AVX512])
@pytest.mark.parametrize("rows,cols", [(64, 512), (64, 10), (1, 200), (7, 16), (28, 16),
                                       (6, 1000), (3, 7)])
def test_register_tile_fits_the_vector_registers_and_divides_the_output(target, rows, cols):
    t = mb.Target(target)
    r, c = register_tile(rows, cols, target)
    v = -(-c // t.vector_lanes())
    assert rows % r == 0 and cols % c == 0
    assert r * v + (v if r > 1 else 0) + 1 <= t.vector_registers


def test_register_tile_of_the_mlp_layer_is_sized_for_avx2_not_avx512():
    # 4 rows of 64 columns are 16 zmm accumulators but 32 ymm ones: more than AVX2 has
    assert register_tile(64, 512, AVX2) == (4, 16)
    assert register_tile(64, 512, AVX512) == (8, 32)


def test_register_tiles_follow_the_machine_model_of_the_target():
    # Haswell's FMAs take 5 cycles, Skylake's 4 (Target.machine): two a cycle need 10
    # accumulators in flight on Haswell, which 14 rows x 1 ymm have and 4 x 2 ymm have not
    assert mb.Target("llvm -mcpu=haswell").machine.fma_latency == 5
    assert register_tile(28, 16, "llvm -mcpu=skylake") == (4, 16)
    assert register_tile(28, 16, "llvm -mcpu=haswell") == (14, 8)


def test_register_tile_narrows_the_columns_when_few_rows_divide():
    # a 7-pixel row of 16 channels: 7 x 2 ymm do not fit with their operands, 1 x 2 idles
    # the FMA units; 7 x 1 ymm (two column tiles) keeps 7 accumulators busy
    assert register_tile(7, 16, AVX2) == (7, 8)


def test_row_tile_takes_rows_from_a_second_axis_when_the_row_is_short():
    # 14 pixels of 16 channels: 14 x 1 ymm broadcasts once per FMA; 2 rows x 2 pixels x
    # 2 ymm broadcast once per two FMAs, in 8 + 2 + 1 registers
    assert row_tile((14, 14), 16, AVX2) == ((2, 2), 16)
    assert row_tile((56, 56), 16, AVX2) == ((4, 1), 16)   # a long row: one axis is enough
    assert row_tile((7, 7), 16, AVX2) == ((7, 1), 8)      # 7 is prime: as register_tile
    assert row_tile((14, 14), 16, AVX2)[0] == row_tile((14, 14, 1), 16, AVX2)[0][:2]


def test_a_ragged_row_tile_splits_a_prime_width_and_leaves_divisible_ones_alone():
    # 7 pixels of 2 ymm: 4 + 3 (the last tile predicated) loads 6 registers a step where
    # 7 x 1 ymm loads 8; a 17-pixel row had only 1-pixel tiles
    assert row_tile((7, 7), 16, AVX2, ragged=True) == ((4, 1), 16)
    assert row_tile((17, 17), 16, AVX2, ragged=True) == ((6, 1), 16)
    for rows in [(14, 14), (28, 28), (56, 56), (5, 5)]:
        assert row_tile(rows, 16, AVX2, ragged=True) == row_tile(rows, 16, AVX2)


def test_pixel_tile_takes_two_channel_blocks_over_a_7x7_map():
    # 49 pixels in tiles of 2 px x 2 blocks x 2 ymm: 8 accumulators in every tile, the
    # last one half predicated; 4 + 3 px of one block leave 6 in every other tile
    assert pixel_tile((7, 7), 32, 16, AVX2) == (2, 2)
    assert pixel_tile((7, 7), 2, 16, AVX2) == (2, 2)


def test_pixel_tile_pairs_channel_blocks_when_a_row_tile_cannot_hide_the_fma_latency():
    # AVX-512: a 7-pixel row of one zmm is 7 accumulators, one short of 2 FMAs x 4 cycles;
    # 7 pixels x 2 blocks make 14, whether or not the row is ragged
    znver5 = "llvm -mcpu=znver5"
    assert pixel_tile((7, 7), 32, 16, znver5) == (7, 2)
    assert pixel_tile((7, 7), 32, 16, znver5, ragged=False) == (7, 2)
    assert pixel_tile((14, 14), 16, 16, znver5) is None    # 14 px: 14 accumulators already
    assert pixel_tile((7, 7), 32, 16, AVX2, ragged=False) is None   # 4 + 3 px x 2 ymm: 8


def test_pixel_tile_leaves_divisible_maps_and_single_blocks_to_row_tile():
    assert pixel_tile((14, 14), 16, 16, AVX2) is None     # 2 x 2 px divide the map
    assert pixel_tile((56, 56), 4, 16, AVX2) is None
    assert pixel_tile((7, 7), 1, 16, AVX2) is None        # one block: nothing to pair
    assert pixel_tile((7, 7), 3, 16, AVX2) is None        # 3 blocks: 3 x 2 px overflow


def test_a_spare_register_keeps_a_one_vector_conv_tile_from_filling_every_register():
    # 8 output channels (1 ymm): 14 pixels + 1 weight + 1 broadcast were all 16 registers
    assert row_tile((28, 28), 8, AVX2, ragged=True) == ((14, 1), 8)
    assert row_tile((28, 28), 8, AVX2, ragged=True, spare=1) == ((4, 2), 8)
    # two vectors of columns leave a register free anyway: the same tiles
    for rows in [(7, 7), (14, 14), (28, 28), (56, 56)]:
        for target in (AVX2, AVX512):
            assert row_tile(rows, 16, target, ragged=True, spare=1) == \
                row_tile(rows, 16, target, ragged=True)


@pytest.mark.parametrize("target", [AVX2, AVX512, "llvm -mcpu=znver5"])
def test_a_one_row_tile_whose_vector_operand_outgrows_l1_loses_to_rows_that_share_it(target):
    # shufflenet's grouped 1x1 conv as a matmul: 68 rows, 196 pixels, 68 deep. A one-row
    # tile of the whole row reads its 53 KB of the vector operand from L2 each row
    (r,), c = row_tile((68,), 196, target, depth=68)
    assert r > 1 and c < 196


@pytest.mark.parametrize("target", [AVX512, "llvm -mcpu=znver5"])
def test_a_deep_reduction_narrows_a_one_row_tile(target):
    # 392 lanes (25 zmm) in one row suit a shallow reduction; 68 deep, its 104 KB of the
    # vector operand would come from L2 every row
    assert row_tile((68,), 1960, target, depth=1) == ((1,), 392)
    (r,), c = row_tile((68,), 1960, target, depth=68)
    half_l1 = mb.codegen.Target(target).machine.l1d_bytes // 2
    assert 68 * 392 * 4 > half_l1                  # the shallow tile's operand: from L2
    assert r > 1 and c < 392                       # so rows share a narrower one


def test_l2_feeds_half_of_what_l1_does():
    m = mb.codegen.Target("llvm -mcpu=znver5").machine
    assert m.l2_loads_per_cycle == m.loads_per_cycle / 2


def test_a_tile_counts_the_registers_llvm_splits_its_columns_into():
    # 28 float32 lanes are a zmm, a ymm and an xmm (three FMAs a row), not two vectors: a
    # shufflenet row of 196 pixels is tiled 98 or 49 wide, not 28
    assert split_registers(28, 16) == 3 and split_registers(49, 16) == 4
    assert split_registers(64, 16) == 4 and split_registers(12, 8) == 2
    (r,), c = row_tile((68,), 196, "llvm -mcpu=znver5", depth=68)
    assert c in (49, 98) and r * split_registers(c, 16) + split_registers(c, 16) + 1 <= 32


def test_column_widths_offer_every_divisor_when_no_whole_vector_divides():
    assert column_widths(64, 16, 30) == [16, 32, 64]
    assert column_widths(196, 16, 30) == [4, 7, 14, 28, 49, 98, 196]
    assert column_widths(196, 16, 4) == [4, 7, 14, 28, 49]
