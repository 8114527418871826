"""ARM code that runs: models compiled for aarch64, exported and linked with Debian's cross
toolchain, run under qemu-aarch64; their outputs equal the x86 build's on the same inputs.

`.ci/run` installs both tools (gcc-aarch64-linux-gnu, qemu-user); elsewhere the tests say
how to get them.
"""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook import models

from .._aarch64 import CC, link, needs_qemu, run

pytestmark = needs_qemu

#: reads each input from a file, runs the model, writes each output to a file
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "NAME.h"
static void *slurp(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  void *buf = malloc(n ? n : 1);
  if (!f || fread(buf, 1, n, f) != n) { fprintf(stderr, "cannot read %s\n", path); exit(90); }
  fclose(f);
  return buf;
}
int main(int argc, char **argv) {
  const void *in[UP_NUM_INPUTS]; void *out[UP_NUM_OUTPUTS];
  size_t in_bytes[] = {IN_BYTES}, out_bytes[] = {OUT_BYTES};
  if (argc != 1 + UP_NUM_INPUTS + UP_NUM_OUTPUTS) return 91;
  for (int i = 0; i < UP_NUM_INPUTS; i++) in[i] = slurp(argv[1 + i], in_bytes[i]);
  for (int i = 0; i < UP_NUM_OUTPUTS; i++) out[i] = malloc(out_bytes[i]);
  int rc = NAME_run(in, out);
  if (rc) { fprintf(stderr, "%s\n", NAME_strerror(rc)); return rc; }
  for (int i = 0; i < UP_NUM_OUTPUTS; i++) {
    FILE *f = fopen(argv[1 + UP_NUM_INPUTS + i], "wb");
    if (!f || fwrite(out[i], 1, out_bytes[i], f) != out_bytes[i]) return 92;
    fclose(f);
  }
  printf("%s\n", NAME_target());
  return 0;
}
"""


def _run_on_arm(exe, feeds: dict, folder) -> tuple[list[np.ndarray], str]:
    """Export ``exe`` (compiled for aarch64), link a driver statically with the cross
    compiler, run it under qemu; (its outputs, the target it printed)."""
    lib = exe.export(folder / "out", name="net", cc=CC)
    assert lib.static is not None
    src = DRIVER.replace("NAME", "net").replace("UP", "NET") \
        .replace("IN_BYTES", ", ".join(str(t.nbytes) for t in exe.inputs)) \
        .replace("OUT_BYTES", ", ".join(str(t.nbytes) for t in exe.outputs))
    (folder / "driver.c").write_text(src)
    program = folder / "driver"
    link(program, [folder / "driver.c", lib.static], include=lib.folder)
    ins = []
    for k, t in enumerate(exe.inputs):
        path = folder / f"in{k}.bin"
        np.ascontiguousarray(feeds[t.name], t.dtype).tofile(path)
        ins.append(str(path))
    outs = [str(folder / f"out{k}.bin") for k in range(len(exe.outputs))]
    printed = run(program, *ins, *outs)
    arrays = [np.fromfile(p, t.dtype).reshape(t.shape) for p, t in zip(outs, exe.outputs)]
    return arrays, printed.strip()


def test_the_convnet_runs_on_arm_as_on_this_machine(tmp_path):
    mod = mb.from_onnx(models.tiny_convnet(), batch_size=2)
    arm = mb.compile(mod, target="llvm -mtriple=aarch64-linux-gnu")
    x = models.sample_input(2, seed=4)
    (got,), target = _run_on_arm(arm, {"image": x}, tmp_path)
    assert target.startswith("llvm -mtriple=aarch64")
    here = mb.compile(mod)(x)
    # the same float program, but other vector widths and FMA contractions: equal to rounding
    np.testing.assert_allclose(got, here, rtol=1e-5, atol=1e-7)


def _quantized_convnet(batch: int):
    model = models.tiny_convnet()
    calibration = [{"image": models.sample_input(1, seed=s)} for s in range(4)]
    return mb.from_onnx(mb.frontend.quantize_qdq(model, calibration), batch_size=batch)


def test_an_int8_model_runs_its_sdot_kernels_on_arm_as_on_this_machine(tmp_path):
    mod = _quantized_convnet(3)
    arm = mb.compile(mod, target="llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1")
    int8 = [k for k in arm.kernels if k.startswith("int8_")]
    assert len(int8) == 4 and "sdot" in arm.kernels[int8[0]].asm()
    x = models.sample_input(3, seed=9)
    (got,), _ = _run_on_arm(arm, {"image": x}, tmp_path)
    # this machine's build runs its own int8 kernels (vpdpbusd or pmaddwd); both sum exactly
    # and requantize the same int32 sums, so the dequantized outputs are equal
    np.testing.assert_array_equal(got, mb.compile(mod)(x))


def test_an_int8_model_runs_on_arm_without_dotprod_in_its_qdq_form(tmp_path):
    mod = _quantized_convnet(1)
    # plain aarch64 has no int8 dot product: opt_level=0 keeps the QDQ form (quantize,
    # dequantize and the float ops between them)
    arm = mb.compile(mod, target="llvm -mtriple=aarch64-linux-gnu", opt_level=0)
    x = models.sample_input(1, seed=9)
    (got,), _ = _run_on_arm(arm, {"image": x}, tmp_path)
    np.testing.assert_array_equal(got, mb.compile(mod)(x))


def test_arm_code_really_differs_from_this_machines(tmp_path):
    # the check above is not a host library run twice: the program is an aarch64 ELF
    mod = mb.from_onnx(models.tiny_convnet(), batch_size=1)
    arm = mb.compile(mod, target="llvm -mtriple=aarch64-linux-gnu")
    _run_on_arm(arm, {"image": models.sample_input(1)}, tmp_path)
    head = (tmp_path / "driver").read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183
