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


def test_the_checksums_cover_every_file_of_an_export(tiny):
    _, lib = tiny
    listed = {ln.split("  ", 1)[1] for ln in (lib.folder / "SHA256SUMS").read_text().splitlines()}
    assert listed == {"tiny.h", "libtiny.so", "libtiny.a", "src/kernels.o", "src/weights.bin",
                      "src/tiny_runtime.c", "src/tiny.map", "src/tiny_runtime.o"}


def test_the_checksums_of_a_cross_export_cover_its_header_and_sources(tmp_path):
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=1),
                     target="llvm -mtriple=aarch64-linux-gnu")
    exe.export(tmp_path, name="tiny")
    ok = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path, capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert sorted(ln.rsplit(":", 1)[0] for ln in ok.stdout.splitlines()) == [
        "src/kernels.o", "src/tiny.map", "src/tiny_runtime.c", "src/weights.bin", "tiny.h"]


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
    assert ok.returncode == 0 and ok.stdout.count(": OK") == 8
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


def _two_input_model(names):
    """Add(a, b) -> y as ONNX, its inputs called ``names``."""
    from onnx import TensorProto, helper
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in names]
    g = helper.make_graph([helper.make_node("Add", list(names), ["y"])], "g", ins,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return mb.compile(mb.from_onnx(m))


HOSTILE = r"""
#include <stdio.h>
#include "net.h"
int main(void) {
  float a[NET_INPUT0_SIZE] = {1, 2, 3, 4}, b[NET_INPUT1_SIZE] = {10, 20, 30, 40};
  float y[NET_OUTPUT0_SIZE];
  const void *in[NET_NUM_INPUTS];
  in[NET_INPUT_FIRST] = a; in[NET_INPUT_SECOND] = b;
  void *out[] = {y};
  if (net_run(in, out) != NET_OK) return 1;
  printf("%g %g %g %g\n", y[0], y[1], y[2], y[3]);
  return 0;
}
"""


@pytest.mark.parametrize("names,idents", [
    (["x */ int injected = 1; /* ", "b"], ["x____int_injected___1_____", "b"]),
    (["conv.1/x", "conv_1_x"], ["conv_1_x", "conv_1_x_1"]),
    (["9 in\n", "\u00e9t\u00e9"], ["9_in_", "_t_"]),
])
def test_input_names_become_c_identifiers_and_stay_in_comments(tmp_path, names, idents):
    exe = _two_input_model(names)
    lib = exe.export(tmp_path, name="net")   # its runtime compiles the header with -Werror
    text = lib.header.read_text()
    code = subprocess.run(["cc", "-E", "-P", str(lib.header)], capture_output=True, text=True,
                          check=True).stdout   # the header without its comments and macros
    assert "injected" not in code and "net_run" in code
    assert f"#define NET_INPUT_{idents[0]} 0" in text and f"#define NET_INPUT_{idents[1]} 1" in text
    for n in names:   # each original name, escaped, in a comment
        assert mb.runtime.c_export.comment_text(n) in text
    src = tmp_path / "main.c"
    src.write_text(HOSTILE.replace("FIRST", idents[0]).replace("SECOND", idents[1]))
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-I", str(tmp_path), str(src), "-o",
                    str(tmp_path / "main"), f"-L{tmp_path}", "-lnet", f"-Wl,-rpath,{tmp_path}"],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["11", "22", "33", "44"]


@pytest.mark.parametrize("name", ["tiny\n", "a\n", "net\r\n"])
def test_an_export_name_with_a_trailing_newline_is_refused(tiny, tmp_path, name):
    exe, _ = tiny
    with pytest.raises(ExportError, match=r"must be a C identifier.*Instead"):
        exe.export(tmp_path, name=name)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("length", [201, 300, 5000])
def test_an_export_name_too_long_for_a_file_name_is_refused(tiny, tmp_path, length):
    exe, _ = tiny
    with pytest.raises(ExportError, match=rf"has {length} characters, more than 200.*Instead"):
        exe.export(tmp_path, name="m" * length)


ALLOC_CALLER = r"""
#include <stdio.h>
#include "big.h"
int main(void) {
  float a[4] = {1, 2, 3, 4}, y[4];
  const void *in[] = {a};
  void *out[] = {y};
  int rc = big_run(in, out);
  printf("%d %s %g %g\n", rc, big_strerror(rc), y[0], y[3]);
  return 0;
}
"""


def test_a_kernel_allocation_that_fails_in_c_returns_the_alloc_code(tmp_path):
    # a kernel with a 512 MiB buffer of its own, run under a 256 MiB address-space limit
    from mlcbook.graph.memory.plan import Plan, Slot
    from mlcbook.ops.types import TensorType
    from mlcbook.runtime.c_export import export_library
    from mlcbook.tir import Allocate, Buffer, BufferStore, For, PrimFunc, Var, seq
    n = 1 << 27
    A, B, T = Buffer("A", (4,)), Buffer("B", (4,)), Buffer("T", (n,))
    i, j = Var("i"), Var("j")
    kernel = mb.build(PrimFunc("big", (A, B), Allocate(T, seq(
        For(i, n, BufferStore(T, A[i % 4] + 1.0, (i,))),
        For(j, 4, BufferStore(B, T[j] * 2.0, (j,)))))))
    assert kernel.entry.may_fail
    plan = Plan([("a", TensorType((4,)))], [Slot((4,), "float32", "input", 0),
                                            Slot((4,), "float32", "temp")],
                [(kernel.name, [0, 1])], [1], False)
    lib = export_library(tmp_path, "big", plan, {kernel.name: kernel.entry},
                         kernel.object_code(), {}, kernel.target)
    assert "#define BIG_ERR_ALLOC 5" in lib.header.read_text()
    src = tmp_path / "main.c"
    src.write_text(ALLOC_CALLER)
    subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-I", str(tmp_path), str(src), "-o",
                    str(tmp_path / "main"), f"-L{tmp_path}", "-lbig", f"-Wl,-rpath,{tmp_path}"],
                   check=True, capture_output=True, text=True)
    limited = subprocess.run(["sh", "-c", f"ulimit -v {256 * 1024}; exec {tmp_path / 'main'}"],
                             capture_output=True, text=True, timeout=120)
    assert limited.stdout.split()[0] == "5" and "could not allocate" in limited.stdout
    free = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, timeout=120)
    assert free.stdout.split()[0] == "0" and free.stdout.split()[-2:] == ["4", "10"]


@pytest.mark.parametrize("name,what", [("stdio", "the system header <stdio.h>"),
                                       ("pthread", "the system header <pthread.h>"),
                                       ("m", "the system library .*libm\\."),
                                       ("c", "the system library .*libc\\.")])
def test_a_name_that_would_shadow_a_system_header_or_library_is_refused(tiny, tmp_path, name,
                                                                        what):
    # stdio.h in the export's folder replaced <stdio.h> for any program built with -I there
    # (pthread.h broke the export's own runtime); libm.so replaced -lm
    exe, _ = tiny
    with pytest.raises(ExportError, match=rf"\[MLC-C008\] export name '{name}' would shadow "
                                          rf"{what}.*Instead: .*name='{name}_model'"):
        exe.export(tmp_path / "out", name=name)
    assert not (tmp_path / "out" / f"{name}.h").exists()
