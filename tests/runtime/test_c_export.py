"""A compiled model exported as a C library: a C program compiled against its header and run
without Python (env -i) gives the outputs exe(x) gives; the library needs only libc, libm and
pthreads; misuse gets documented return codes and clear export errors."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import models
from mlcbook.errors import ExportError
from mlcbook.frontend import examples

from ..graph._models import inception_module

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")

# reads the one input from argv[1], runs, writes the one output to argv[2]; argv[3] == "null"
# passes a NULL input pointer instead
CALLER = r"""
#include <stdio.h>
#include <string.h>
#include "NAME.h"
static NAME_input0_t x[UP_INPUT0_SIZE];
static NAME_output0_t y[UP_OUTPUT0_SIZE];
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(x, sizeof x, 1, f) != 1) return 100;
  fclose(f);
  const void *in[] = {argc > 3 && !strcmp(argv[3], "null") ? NULL : x};
  void *out[] = {y};
  int rc = NAME_run(in, out);
  if (rc != UP_OK) { fprintf(stderr, "NAME_run: %d %s\n", rc, NAME_strerror(rc)); return rc; }
  f = fopen(argv[2], "wb");
  if (!f || fwrite(y, sizeof y, 1, f) != 1) return 101;
  fclose(f);
  printf("%s\n", NAME_target());
  return 0;
}
"""


def _caller(folder, name: str, static: bool = False):
    src = folder / "main.c"
    src.write_text(CALLER.replace("NAME", name).replace("UP", name.upper()))
    exe = folder / ("main_static" if static else "main")
    lib = ([str(folder / f"lib{name}.a"), "-lm", "-lpthread"] if static else
           [f"-L{folder}", f"-l{name}", f"-Wl,-rpath,{folder}"])
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-I", str(folder), str(src), "-o", str(exe),
                    *lib], check=True, capture_output=True, text=True)
    return exe


def _run_c(program, x: np.ndarray, out_shape, out_dtype, *extra, env=()) -> np.ndarray:
    folder = program.parent
    (folder / "x.bin").write_bytes(np.ascontiguousarray(x).tobytes())
    # env -i: no PYTHONPATH, no virtualenv, no LD_LIBRARY_PATH; the rpath finds the library
    proc = subprocess.run(["env", "-i", *env, str(program), str(folder / "x.bin"),
                           str(folder / "y.bin"), *extra], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return np.frombuffer((folder / "y.bin").read_bytes(), out_dtype).reshape(out_shape)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=2))
    folder = tmp_path_factory.mktemp("tiny")
    return exe, exe.export(folder, name="tiny")


def test_the_tiny_convnet_runs_from_c_as_it_does_in_python(tiny):
    exe, lib = tiny
    x = models.sample_input(2, seed=3)
    y = _run_c(_caller(lib.folder, "tiny"), x, (2, 10), np.float32)
    np.testing.assert_array_equal(y, exe(x))


@pytest.mark.parametrize("threads", ["1", "3"])
def test_any_number_of_pool_threads_gives_the_same_outputs(tiny, threads):
    exe, lib = tiny
    x = models.sample_input(2, seed=6)
    y = _run_c(_caller(lib.folder, "tiny"), x, (2, 10), np.float32,
               env=[f"TINY_NUM_THREADS={threads}"])
    np.testing.assert_array_equal(y, exe(x))


def test_the_static_library_gives_the_same_outputs(tiny):
    exe, lib = tiny
    x = models.sample_input(2, seed=4)
    y = _run_c(_caller(lib.folder, "tiny", static=True), x, (2, 10), np.float32)
    np.testing.assert_array_equal(y, exe(x))


def test_a_larger_cnn_runs_from_c_as_it_does_in_python(tmp_path):
    exe = mb.compile(mb.from_onnx(examples.cnn(batch=8)))
    lib = exe.export(tmp_path, name="cnn")
    x = np.random.default_rng(0).standard_normal((8, 1, 28, 28)).astype(np.float32)
    y = _run_c(_caller(lib.folder, "cnn"), x, (8, 10), np.float32)
    np.testing.assert_array_equal(y, exe(x))


def test_branches_written_into_their_concat_run_from_c_as_in_python(tmp_path):
    exe = mb.compile(inception_module(1))
    assert not any(k.startswith("concat") for k, _ in exe.plan.steps)
    lib = exe.export(tmp_path, name="incep")
    x = np.random.default_rng(0).standard_normal((1, 16, 6, 6)).astype(np.float32)
    y = _run_c(_caller(lib.folder, "incep"), x, (1, 16, 6, 6), np.float32)
    np.testing.assert_array_equal(y, exe(x))


def test_the_library_needs_only_libc_libm_and_pthreads(tiny):
    _, lib = tiny
    dynamic = subprocess.run(["readelf", "-d", str(lib.shared)], capture_output=True,
                             text=True, check=True).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    assert needed and needed <= {"libc.so.6", "libm.so.6", "libpthread.so.0"}, needed
    ldd = subprocess.run(["ldd", str(lib.shared)], capture_output=True, text=True).stdout
    names = {ln.split()[0] for ln in ldd.strip().splitlines()}
    allowed = re.compile(r"^(linux-vdso\.so\.1|/?.*ld-linux.*\.so\.\d|lib(c|m|pthread)\.so\.\d)$")
    assert names and all(allowed.match(n) for n in names), names


def test_the_header_declares_run_shapes_and_codes(tiny):
    _, lib = tiny
    text = lib.header.read_text()
    assert "int tiny_run(const void *const *inputs, void *const *outputs);" in text
    assert "TINY_INPUT0_SHAPE[] = {2, 1, 28, 28}" in text and "TINY_OUTPUT0_SIZE 20" in text
    assert "#define TINY_ERR_NULL_INPUT 1" in text


def test_a_null_input_returns_its_code(tiny):
    _, lib = tiny
    program = _caller(lib.folder, "tiny")
    (lib.folder / "x.bin").write_bytes(models.sample_input(2).tobytes())
    proc = subprocess.run(["env", "-i", str(program), str(lib.folder / "x.bin"),
                           str(lib.folder / "y.bin"), "null"], capture_output=True, text=True)
    assert proc.returncode == 1 and "an input pointer is NULL" in proc.stderr


def test_only_the_api_is_exported(tiny):
    _, lib = tiny
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(lib.shared)],
                             capture_output=True, text=True, check=True).stdout.split()[2::3]
    assert sorted(symbols) == ["tiny_run", "tiny_set_num_threads", "tiny_strerror", "tiny_target"]


def test_a_name_that_is_not_a_c_identifier_is_refused(tiny, tmp_path):
    exe, _ = tiny
    with pytest.raises(ExportError, match=r"'my-model' must be a C identifier.*Instead"):
        exe.export(tmp_path, name="my-model")


def test_a_missing_c_compiler_is_named(tiny, tmp_path):
    exe, _ = tiny
    with pytest.raises(ExportError, match=r"no C compiler 'no-such-cc' on PATH.*Instead"):
        exe.export(tmp_path, name="tiny", cc="no-such-cc")


def test_a_cross_target_exports_the_header_and_sources(tmp_path):
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=1),
                     target="llvm -mtriple=aarch64-linux-gnu")
    lib = exe.export(tmp_path, name="tiny")
    assert lib.shared is None and lib.static is None and lib.header.is_file()
    obj = (tmp_path / "src" / "kernels.o").read_bytes()
    assert int.from_bytes(obj[18:20], "little") == 183               # EM_AARCH64
    assert "__builtin_cpu_supports" not in (tmp_path / "src" / "tiny_runtime.c").read_text()


@pytest.mark.skipif(not mb.Target("llvm -mcpu=x86-64-v4").missing_features(),
                    reason="needs an x86 CPU without AVX-512")
def test_a_library_for_features_this_cpu_lacks_returns_the_cpu_code(tmp_path):
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=2),
                     target="llvm -mcpu=x86-64-v4")
    lib = exe.export(tmp_path, name="tiny")
    program = _caller(lib.folder, "tiny")
    (tmp_path / "x.bin").write_bytes(models.sample_input(2).tobytes())
    proc = subprocess.run(["env", "-i", str(program), str(tmp_path / "x.bin"),
                           str(tmp_path / "y.bin")], capture_output=True, text=True)
    assert proc.returncode == 3 and "lacks an instruction-set feature" in proc.stderr


def test_the_checksums_tell_a_damaged_library_from_a_good_one(tiny, tmp_path):
    _, lib = tiny
    copy = tmp_path / "copy"
    shutil.copytree(lib.folder, copy)
    ok = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=copy, capture_output=True,
                        text=True)
    assert ok.returncode == 0 and ok.stdout.count(": OK") == 3
    data = bytearray((copy / "libtiny.so").read_bytes())
    data[len(data) // 2] ^= 0x01
    (copy / "libtiny.so").write_bytes(bytes(data))
    bad = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=copy, capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "libtiny.so: FAILED" in bad.stdout


def test_an_index_out_of_range_returns_the_index_code(tmp_path):
    # the kernels clamp indices; like exe(...), the library refuses them instead
    from mlcbook.graph import Function, TensorType, Var, op
    data, idx = Var("data", TensorType((3, 4))), Var("idx", TensorType((2, 2), "int64"))
    exe = mb.compile(Function([data, idx], op.gather_nd(data, idx)))
    lib = ctypes.CDLL(str(exe.export(tmp_path, name="gnd").shared))
    d, out = np.arange(12, dtype="float32").reshape(3, 4), np.zeros(2, "float32")
    for i, code in (([[2, 3], [0, -4]], 0), ([[0, 4], [0, 0]], 4), ([[-4, 0], [0, 0]], 4)):
        i = np.array(i, "int64")
        ins = (ctypes.c_void_p * 2)(d.ctypes.data, i.ctypes.data)
        rc = lib.gnd_run(ins, (ctypes.c_void_p * 1)(out.ctypes.data))
        assert rc == code, (i.tolist(), rc)
        if code == 0:
            np.testing.assert_array_equal(out, exe(d, i))
    lib.gnd_strerror.restype = ctypes.c_char_p
    assert b"outside [-n, n)" in lib.gnd_strerror(4)
