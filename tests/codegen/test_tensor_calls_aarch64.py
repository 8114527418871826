"""Arm's int8 tile (``sdot``, the dotprod feature) computes the exact u8 x i8 product: each
register tile the int8 rule offers, built for aarch64, linked with a small C driver and run
under qemu-aarch64, against numpy's int32 product; the assembly shows the instruction."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import MissingFeatureError
from mlcbook.graph.kernels.int8_matmul import int8_matmul_tiled
from mlcbook.ops.int8_kernels import pack_int8
from mlcbook.tune import Space

from .._aarch64 import link, needs_qemu, run

ARM = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"

#: reads A and the packed B, runs the kernel on one thread, writes C
DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef void (*body_fn)(int64_t, int64_t, void *);
static void launch(body_fn body, int64_t n, void *closure) { body(0, n, closure); }
void mlcb_NAME(void *, void *, void *, void *);
int main(int argc, char **argv) {
  size_t na = NA, nb = NB, nc = NC;
  unsigned char *a = malloc(na), *b = malloc(nb), *c = calloc(nc, 1);
  FILE *f;
  if (argc != 4) return 91;
  if (!(f = fopen(argv[1], "rb")) || fread(a, 1, na, f) != na) return 92;
  fclose(f);
  if (!(f = fopen(argv[2], "rb")) || fread(b, 1, nb, f) != nb) return 93;
  fclose(f);
  mlcb_NAME(a, b, c, (void *)launch);
  if (!(f = fopen(argv[3], "wb")) || fwrite(c, 1, nc, f) != nc) return 94;
  fclose(f);
  return 0;
}
"""


def _tiles(f, target=ARM):
    """The default point of ``f``'s space for an Arm ``target`` and its ``.tile`` knob."""
    p = Space(f, target).default_point()
    return p, next(k for k in p.decisions if k.endswith(".tile"))


def _run_kernel(func, a, bp, m, n, folder) -> np.ndarray:
    kernel = mb.build(func, target=ARM)
    kernel.export_object(folder / "kernel.o")
    src = DRIVER.replace("NAME", func.name).replace("NA", str(a.nbytes)) \
        .replace("NB", str(bp.nbytes)).replace("NC", str(4 * m * n))
    (folder / "driver.c").write_text(src)
    a.tofile(folder / "a.bin")
    bp.tofile(folder / "b.bin")
    link(folder / "driver", [folder / "driver.c", folder / "kernel.o"])
    run(folder / "driver", folder / "a.bin", folder / "b.bin", folder / "c.bin")
    return np.fromfile(folder / "c.bin", np.int32).reshape(m, n)


def _operands(m: int, n: int, k: int, seed: int):
    """uint8 activations and int8 weights over their whole ranges, a row of 255s and
    columns of -128s and 127s among them (the sums the -128 shift changes most)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    a[0], b[0], b[-1] = 255, -128, 127
    return a, b


@needs_qemu
@pytest.mark.parametrize("m, n, k", [(7, 64, 1024), (50, 16, 64)])
def test_the_sdot_tile_computes_the_exact_product_on_arm(tmp_path, m, n, k):
    # 7 rows: a register tile of 4 and one of 3; 1024 terms: the depth loop; 64 columns: 4
    # column tiles
    f = int8_matmul_tiled(m, n, k)
    p, _ = _tiles(f)
    a, b = _operands(m, n, k, seed=m)
    got = _run_kernel(p.func, a, pack_int8(b), m, n, tmp_path)
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)


@needs_qemu
@pytest.mark.parametrize("tile", [(1, 1), (2, 1), (1, 2)])
def test_every_sdot_tile_of_the_space_computes_the_exact_product_on_arm(tmp_path, tile):
    m, n, k = 5, 32, 48
    f = int8_matmul_tiled(m, n, k)
    p, name = _tiles(f)
    q = Space(f, ARM).point({**p.decisions, name: p.options[name].index(tile)})
    assert q.value(name) == tile
    a, b = _operands(m, n, k, seed=1)
    got = _run_kernel(q.func, a, pack_int8(b), m, n, tmp_path)
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.parametrize("target", [ARM, "llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod"])
def test_the_arm_int8_kernel_is_sdot_with_the_activations_top_bit_flipped(target):
    f = int8_matmul_tiled(8, 64, 256)
    p, name = _tiles(f, target)
    assert p.value(name) == (4, 1)
    assert "aarch64.dotprod.u8i8_sdot_4x16x256_4x16" in p.func.script()
    asm = mb.build(p.func, target=target).asm()
    # the depth loop's body: 4 groups of terms x (4 rows x 4 registers of sums + 4 column
    # sums), each an sdot v.4s, v.16b, v.16b; each row's 4 activations flipped once a group
    assert asm.count("sdot\tv") == 4 * (4 * 4 + 4) and "vpdpbusd" not in asm
    assert asm.count("#-2139062144") == 1 and asm.count("eor\tw") == 4 * 4


def test_an_arm_target_without_dotprod_cannot_build_the_sdot_tile():
    f = int8_matmul_tiled(8, 64, 256)
    p, _ = _tiles(f)
    with pytest.raises(MissingFeatureError, match="dotprod"):
        mb.build(p.func, target="llvm -mtriple=aarch64-linux-gnu -mcpu=generic")
