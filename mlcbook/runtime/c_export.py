"""Ahead-of-time export: a compiled model as a C library that needs no Python, numpy or LLVM.

:meth:`mlcbook.graph.Executable.export` writes, for a model named ``NAME``::

    NAME.h          the API: NAME_run, the input/output shapes and dtypes, the error codes
    libNAME.so      kernels + plan executor + weights; needs only libc, libm and pthreads
    libNAME.a       the same as a static library (link with -lm -lpthread)
    SHA256SUMS      the sha256 of every file the export wrote (src/ too), for
                    ``sha256sum -c SHA256SUMS`` in the folder
    src/            what they were built from: kernels.o (LLVM), NAME_runtime.c, weights.bin

For a target of another architecture (``llvm -mtriple=aarch64-linux-gnu``) give that
architecture's C compiler as ``cc`` (``aarch64-linux-gnu-gcc``; its ``ar`` too, when there is
one); with the host's, only the header, ``src/`` and SHA256SUMS are written.

The runtime is generated C: one function that points every slot of the plan at an input,
a weight (embedded in the library's read-only data with ``.incbin``) or its offset in one
static arena, then calls the kernels in plan order, each with the address of a small
pthread pool's launcher for its parallel loops. ::

    #include "tiny.h"
    float x[TINY_INPUT0_SIZE], y[TINY_OUTPUT0_SIZE];
    const void *in[] = {x};  void *out[] = {y};
    int rc = tiny_run(in, out);          /* 0, or one of the TINY_ERR_* codes */

The header names each input (output) by its position (``TINY_INPUT0_*``) and also by its
model name as a C identifier, ``TINY_INPUT_<id>`` (its index): ``<id>`` is the name with
every character other than an ASCII letter, digit or ``_`` replaced by ``_`` (``"conv.1/x"``
-> ``conv_1_x``); when two inputs give the same ``<id>``, the later ones get ``_<index>``
appended until it is unique. The original name appears only inside comments, written as a
JSON string (control characters and non-ASCII escaped) with every ``/`` written ``\\u002f``, so
that no name can end the comment or open another. ``NAME`` itself must be a lower-case C
identifier of at most 200 characters that is not the name of a header or library of the
system's C compiler (``stdio``, ``pthread``, ``m``): the files would shadow them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ExportError

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: the longest export name: libNAME.so and NAME_runtime.c must stay file names (255 bytes)
MAX_NAME = 200
_ALIGN = 64
_C_TYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "int16": "int16_t",
            "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
            "uint32": "uint32_t", "uint64": "uint64_t", "bool": "uint8_t",
            "float16": "uint16_t", "bfloat16": "uint16_t"}
# target features the C runtime can test with __builtin_cpu_supports (GCC and Clang names)
_CPU_CHECKS = ("sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "bmi", "bmi2", "avx512f",
               "avx512bw", "avx512dq", "avx512vl", "avx512cd", "avx512vnni", "avx512vbmi")

#: the documented return codes of NAME_run
ERRORS = {1: "an input pointer is NULL", 2: "an output pointer is NULL",
          3: "this CPU lacks an instruction-set feature the library was compiled for",
          4: "an index input holds a value outside [-n, n) for the axis of length n it indexes",
          5: "a kernel could not allocate its temporary buffers (out of memory)"}


@dataclass(frozen=True)
class ExportedModel:
    """What :func:`export_library` wrote: the header, the shared and static libraries (None
    for a target of another architecture than ``cc``'s: then ``src/`` holds what to build
    them from with a cross compiler, passed as ``cc``)."""

    name: str
    header: Path
    shared: Path | None
    static: Path | None

    @property
    def folder(self) -> Path:
        return self.header.parent


def export_library(out_dir, name: str, plan, entries: dict, object_code: bytes,
                   consts: dict[int, np.ndarray], target, cc: str = "cc") -> ExportedModel:
    """Write ``NAME.h``, ``libNAME.so`` and ``libNAME.a`` for ``plan`` into ``out_dir``.

    ``entries`` maps each kernel name of the plan to its EntryInfo (symbol and parameters),
    ``object_code`` is the LLVM object holding them, ``consts`` the weights by slot.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ExportError(f"export name {name!r} must be a C identifier in lower case "
                          "(letters, digits, _); Instead: e.g. name='tiny_convnet'")
    if len(name) > MAX_NAME:
        raise ExportError(f"export name {name[:20]!r}... has {len(name)} characters, more than "
                          f"{MAX_NAME}: the library's file names would be too long. Instead: "
                          "a shorter name, e.g. name='tiny_convnet'")
    if shutil.which(cc) is None:
        raise ExportError(f"no C compiler {cc!r} on PATH; the export links the kernels with the "
                          "system C compiler. Instead: install one (Debian: apt-get install gcc)")
    _check_not_a_system_name(name, cc)
    cross = target.arch != _host_arch(cc)
    out = Path(out_dir)
    src = out / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / "kernels.o").write_bytes(object_code)
    weights, const_offsets = _pack_weights(plan, consts)
    (src / "weights.bin").write_bytes(weights)
    header = out / f"{name}.h"
    header.write_text(_header(name, plan, target), encoding="utf-8")
    (src / f"{name}_runtime.c").write_text(
        _runtime(name, plan, entries, const_offsets, target), encoding="utf-8")
    (src / f"{name}.map").write_text(f"{{ global: {name}_*; local: *; }};\n", encoding="utf-8")
    written = [header] + [src / f for f in ("kernels.o", "weights.bin", f"{name}_runtime.c",
                                            f"{name}.map")]
    if cross:  # cc cannot link this architecture: the sources are the export
        _write_sums(out, written)
        return ExportedModel(name, header, None, None)
    shared, static = out / f"lib{name}.so", out / f"lib{name}.a"
    flags = ["-O2", "-fPIC", "-std=c11", "-Wall", "-Werror", "-I", str(out.resolve())]
    _run([cc, *flags, "-c", f"{name}_runtime.c", "-o", f"{name}_runtime.o"], src)
    _run([cc, "-shared", "-o", str(shared.resolve()), f"{name}_runtime.o", "kernels.o",
          f"-Wl,--version-script={name}.map", "-Wl,-z,noexecstack", "-lm", "-lpthread"], src)
    static.unlink(missing_ok=True)
    _run([_ar_for(cc), "rcs", str(static.resolve()), f"{name}_runtime.o", "kernels.o"], src)
    _write_sums(out, written + [src / f"{name}_runtime.o", shared, static])
    return ExportedModel(name, header, shared, static)


def _check_not_a_system_name(name: str, cc: str) -> None:
    """Refuse a name whose ``NAME.h`` or ``libNAME`` is also a system header or library of
    ``cc`` (``stdio``, ``pthread``, ``m``): with ``-I``/``-L`` on the export's folder, a
    program (the export's own runtime too) would get this library's file instead of the
    system's. ``cc`` itself says what it would find."""
    found = None
    probe = subprocess.run([cc, "-E", "-x", "c", "-o", os.devnull, "-"], text=True,
                           input=f"#include <{name}.h>\n", capture_output=True)
    if probe.returncode == 0:
        found = f"the system header <{name}.h>"
    else:
        for lib in (f"lib{name}.so", f"lib{name}.a"):
            where = subprocess.run([cc, f"-print-file-name={lib}"], capture_output=True,
                                   text=True).stdout.strip()
            if where not in ("", lib):   # a bare name back: cc knows no such file
                found = f"the system library {where}"
                break
    if found is not None:
        raise ExportError(f"export name {name!r} would shadow {found}: a program built with "
                          "-I/-L on the export's folder would use this model's file in its "
                          f"place. Instead: a name of the model's own, e.g. name='{name}_model'")


def _write_sums(out: Path, files: list[Path]) -> None:
    """SHA256SUMS in ``out``: every file the export wrote, by its path from ``out``, so that
    ``sha256sum -c SHA256SUMS`` in the folder tells a damaged copy from a good one."""
    (out / "SHA256SUMS").write_text("".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(out).as_posix()}\n"
        for p in sorted(files)), encoding="utf-8")


def _ar_for(cc: str) -> str:
    """The archiver that goes with ``cc``: a cross compiler's own (``aarch64-linux-gnu-gcc``
    -> ``aarch64-linux-gnu-ar``) when it is installed, else the system's ``ar``."""
    base = os.path.basename(cc)
    for suffix in ("gcc", "clang", "cc"):
        if base.endswith("-" + suffix):
            own = os.path.join(os.path.dirname(cc), base[:-len(suffix)] + "ar")
            if shutil.which(own):
                return own
    return "ar"


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ExportError(f"`{' '.join(cmd)}` failed in {cwd}:\n{proc.stderr.strip()[-2000:]}\n"
                          "This is a bug in mlcbook's export if the compiler works otherwise")


def _host_arch(cc: str) -> str:
    try:
        machine = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True).stdout
    except OSError:
        return os.uname().machine
    return machine.split("-")[0] or os.uname().machine


def _pack_weights(plan, consts) -> tuple[bytes, dict[int, int]]:
    blob = bytearray()
    offsets = {}
    for i, s in enumerate(plan.slots):
        if s.kind != "const":
            continue
        blob += b"\0" * (-len(blob) % _ALIGN)
        offsets[i] = len(blob)
        blob += np.ascontiguousarray(consts[i], dtype=s.dtype).tobytes()
    return bytes(blob), offsets


def _nbytes(slot) -> int:
    return int(np.prod(slot.shape, dtype=np.int64)) * np.dtype(slot.dtype).itemsize


def _root(plan, i: int) -> int:
    while plan.slots[i].kind == "view":
        i = plan.slots[i].ref
    return i


def _tensors(plan) -> list[tuple[str, str, tuple, str]]:
    """(prefix, name, shape, dtype) of each input, then each output, in graph order."""
    rows = [(f"INPUT{k}", n, t.shape, t.dtype) for k, (n, t) in enumerate(plan.inputs)]
    rows += [(f"OUTPUT{k}", n, plan.slots[o].shape, plan.slots[o].dtype)
             for k, (n, o) in enumerate(zip(plan.names_of_outputs, plan.outputs))]
    return rows


def c_identifiers(names) -> list[str]:
    """C identifiers for tensor ``names``, by the rule of the module docstring.

        >>> c_identifiers(["image", "conv.1/x", "conv_1_x", "*/"])
        ['image', 'conv_1_x', 'conv_1_x_2', '__']
    """
    out, seen = [], set()
    for k, n in enumerate(names):
        ident = re.sub(r"[^A-Za-z0-9_]", "_", str(n)) or "_"
        while ident in seen:
            ident += f"_{k}"
        seen.add(ident)
        out.append(ident)
    return out


def comment_text(text: str) -> str:
    """``text`` safe inside a C block comment: a JSON string whose every ``/`` is written
    ``\\u002f`` (JSON's own escape), so it holds neither ``*/`` nor ``/*``
    (``comment_text("a*/b")`` is the 11 characters ``"a*\\u002fb"``)."""
    return json.dumps(str(text)).replace("/", "\\u002f")


def _header(name: str, plan, target) -> str:
    up = name.upper()
    lines = [f"/* {name}.h: the model {name!r} compiled ahead of time by mlcbook.",
             f" * Target: {target}. Link with -l{name} (-lm -lpthread for the static library).",
             " * Inputs and outputs are contiguous row-major arrays of the dtypes below, in graph",
             " * order. Calls are serialized by a lock; parallel loops run on a pthread pool of",
             f" * {up}_NUM_THREADS or MLCBOOK_NUM_THREADS threads (default: the online CPUs). */",
             f"#ifndef {up}_H", f"#define {up}_H", "#include <stddef.h>", "#include <stdint.h>",
             "#ifdef __cplusplus", 'extern "C" {', "#endif", "",
             f"#define {up}_NUM_INPUTS {len(plan.inputs)}",
             f"#define {up}_NUM_OUTPUTS {len(plan.outputs)}", "",
             "/* return codes of the run function */", f"#define {up}_OK 0"]
    for code, text in ERRORS.items():
        tag = {1: "NULL_INPUT", 2: "NULL_OUTPUT", 3: "CPU", 4: "INDEX", 5: "ALLOC"}[code]
        lines.append(f"#define {up}_ERR_{tag} {code}  /* {text} */")
    lines.append("")
    idents = c_identifiers(n for n, _ in plan.inputs)
    for k, (ident, (tname, _)) in enumerate(zip(idents, plan.inputs)):
        lines.append(f"#define {up}_INPUT_{ident} {k}  /* input {comment_text(tname)} */")
    outs = plan.names_of_outputs   # the ONNX graph's output names
    for k, (ident, tname) in enumerate(zip(c_identifiers(outs), outs)):
        lines.append(f"#define {up}_OUTPUT_{ident} {k}  /* output {comment_text(tname)} */")
    lines.append("")
    for prefix, tname, shape, dtype in _tensors(plan):
        dims = ", ".join(map(str, shape)) or "1"
        lines += [f"/* {prefix.lower()}: {comment_text(tname)}, {dtype}"
                  f"[{', '.join(map(str, shape))}] */",
                  f"#define {up}_{prefix}_NDIM {len(shape)}",
                  f"#define {up}_{prefix}_SIZE {int(np.prod(shape, dtype=np.int64))}",
                  f'#define {up}_{prefix}_DTYPE "{dtype}"',
                  f"typedef {_C_TYPES.get(dtype, 'uint8_t')} {name}_{prefix.lower()}_t;",
                  f"static const int64_t {up}_{prefix}_SHAPE[] = {{{dims}}};", ""]
    lines += [f"/* Run the model: inputs[i] and outputs[i] point at {up}_INPUTi_SIZE and",
              f" * {up}_OUTPUTi_SIZE elements. Returns {up}_OK or a {up}_ERR_* code. */",
              f"int {name}_run(const void *const *inputs, void *const *outputs);",
              "/* What a return code means, as text. */",
              f"const char *{name}_strerror(int code);",
              "/* The target the kernels were compiled for (LLVM triple, CPU, features). */",
              f"const char *{name}_target(void);",
              "/* Threads for parallel loops (0: the default); takes effect at the next run. */",
              f"void {name}_set_num_threads(int n);",
              "", "#ifdef __cplusplus", "}", "#endif", f"#endif /* {up}_H */", ""]
    return "\n".join(lines)


def _cpu_features(target) -> list[str]:
    if target.arch not in ("x86_64", "amd64"):
        return []
    on = {f[1:] for f in target.features.split(",") if f.startswith("+")}
    return [f for f in _CPU_CHECKS if f in on]


def _runtime(name: str, plan, entries, const_offsets: dict[int, int], target) -> str:
    up = name.upper()
    # temps without an arena offset (no memory plan) get places of their own after it
    offsets = dict(plan.offsets)
    end = -(-int(plan.arena_bytes) // _ALIGN) * _ALIGN
    for i, s in enumerate(plan.slots):
        if s.kind == "temp" and i not in offsets:
            offsets[i] = end
            end += -(-_nbytes(s) // _ALIGN) * _ALIGN
    arena = max(end, int(plan.arena_bytes), _ALIGN)
    decls, slot_lines, calls = [], [], []
    for kname in sorted({k for k, _ in plan.steps}):
        e = entries[kname]
        decls.append(f"extern {'int' if e.may_fail else 'void'} {e.symbol}"
                     f"({', '.join(['void *'] * (len(e.params) + 1))});")
    for i, s in enumerate(plan.slots):
        if s.kind == "input":
            slot_lines.append(f"  p[{i}] = (void *)inputs[{s.ref}];")
        elif s.kind == "const":
            slot_lines.append(f"  p[{i}] = (void *)({name}_weights + {const_offsets[i]});")
        elif s.kind == "temp":
            slot_lines.append(f"  p[{i}] = arena + {offsets[i]};")
        else:  # views come after the slot they view, in plan order
            slot_lines.append(f"  p[{i}] = p[{s.ref}];")
    for step, (kname, args) in enumerate(plan.steps):
        # the kernels clamp indices; the reference raises for one out of range, so check first
        for _, pos, n, _, coord in (c for c in plan.checks if c[0] == step):
            s = plan.slots[args[pos]]
            size = int(np.prod(s.shape, dtype=np.int64))
            first, stride = (0, 1) if coord < 0 else (coord, s.shape[-1])
            calls.append(f"  if (!in_range(p[{args[pos]}], {size}, {first}, {stride}, {n}, "
                         f"{int(s.dtype == 'int64')})) {{\n"
                         f"    pthread_mutex_unlock(&run_lock);\n    return {up}_ERR_INDEX;\n  }}")
        ptrs = ", ".join(f"p[{a}]" for a in args)
        call = f"{entries[kname].symbol}({ptrs}, (void *)launch)"
        calls.append(f"  if ({call}) {{\n    pthread_mutex_unlock(&run_lock);\n"
                     f"    return {up}_ERR_ALLOC;\n  }}" if entries[kname].may_fail
                     else f"  {call};")
    copies = [f"  memcpy(outputs[{k}], p[{o}], {_nbytes(plan.slots[o])});"
              for k, o in enumerate(plan.outputs) if _nbytes(plan.slots[o])]
    checks = " ||\n      ".join(f'!__builtin_cpu_supports("{f}")' for f in _cpu_features(target))
    cpu_check = (f"  __builtin_cpu_init();\n  if ({checks})\n    return {up}_ERR_CPU;\n"
                 if checks else "")
    errors = "\n".join(f'    case {c}: return "{t}";' for c, t in ERRORS.items())
    return _RUNTIME_C.format(in_range=_IN_RANGE_C if plan.checks else "",
        name=name, up=up, target=str(target), decls="\n".join(decls),
        nslots=max(len(plan.slots), 1), arena=arena, slots="\n".join(slot_lines),
        calls="\n".join(calls), copies="\n".join(copies), cpu_check=cpu_check, errors=errors,
        n_in=len(plan.inputs), n_out=len(plan.outputs))


# emitted only for plans with index checks (-Werror refuses an unused static function)
_IN_RANGE_C = r"""
/* elements first, first + stride, ... below size of an int32/int64 index array lie in [-n, n) */
static int in_range(const void *data, int64_t size, int64_t first, int64_t stride, int64_t n,
                    int wide) {
  for (int64_t i = first; i < size; i += stride) {
    int64_t v = wide ? ((const int64_t *)data)[i] : ((const int32_t *)data)[i];
    if (v < -n || v >= n) return 0;
  }
  return 1;
}
"""

_RUNTIME_C = r"""/* Generated by mlcbook: the plan executor and thread pool of {name}.h. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "{name}.h"

{decls}
{in_range}
/* the weights, embedded from weights.bin in read-only data */
extern const unsigned char {name}_weights[];
__asm__(".section .rodata\n.balign 64\n.type {name}_weights, %object\n"
        "{name}_weights:\n.incbin \"weights.bin\"\n.byte 0\n.previous");

/* every intermediate of the plan lives at its offset in this one arena */
static unsigned char arena[{arena}] __attribute__((aligned(64)));
static pthread_mutex_t run_lock = PTHREAD_MUTEX_INITIALIZER;

/* --- the thread pool: a parallel loop of n iterations is cut into one chunk per thread;
   the caller and the workers take chunks under the pool's lock until none is left --- */
typedef void (*body_fn)(int64_t, int64_t, void *);
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_start = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static body_fn job_body;
static int64_t job_n;
static void *job_closure;
static int job_chunks, job_next, job_left, workers, wanted;
static unsigned long generation;

static void take_chunks(void) {{
  while (job_next < job_chunks) {{
    int c = job_next++;
    body_fn body = job_body;
    int64_t n = job_n, chunks = job_chunks;
    void *closure = job_closure;
    pthread_mutex_unlock(&pool_lock);
    body(c * n / chunks, (c + 1) * n / chunks, closure);
    pthread_mutex_lock(&pool_lock);
    if (--job_left == 0) pthread_cond_broadcast(&pool_done);
  }}
}}

static void *worker(void *arg) {{
  unsigned long seen = 0;
  (void)arg;
  pthread_mutex_lock(&pool_lock);
  for (;;) {{
    while (generation == seen) pthread_cond_wait(&pool_start, &pool_lock);
    seen = generation;
    take_chunks();
  }}
  return NULL;
}}

static int thread_count(void) {{
  if (wanted > 0) return wanted;
  const char *env = getenv("{up}_NUM_THREADS");
  if (!env || !*env) env = getenv("MLCBOOK_NUM_THREADS");
  long n = env && *env ? strtol(env, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}}

static void launch(body_fn body, int64_t n, void *closure) {{
  int t = thread_count();
  if (t <= 1 || n <= 1) {{
    body(0, n, closure);
    return;
  }}
  pthread_mutex_lock(&pool_lock);
  if (job_left > 0) {{  /* a parallel loop inside a running one: run it on this thread */
    pthread_mutex_unlock(&pool_lock);
    body(0, n, closure);
    return;
  }}
  while (workers < t - 1) {{
    pthread_t tid;
    if (pthread_create(&tid, NULL, worker, NULL) != 0) break;  /* fewer threads, still right */
    pthread_detach(tid);
    workers++;
  }}
  job_body = body; job_n = n; job_closure = closure;
  job_chunks = (int)(n < workers + 1 ? n : workers + 1);
  job_next = 0; job_left = job_chunks;
  generation++;
  pthread_cond_broadcast(&pool_start);
  take_chunks();
  while (job_left > 0) pthread_cond_wait(&pool_done, &pool_lock);
  pthread_mutex_unlock(&pool_lock);
}}

void {name}_set_num_threads(int n) {{
  pthread_mutex_lock(&pool_lock);
  wanted = n > 0 ? (n > 256 ? 256 : n) : 0;
  pthread_mutex_unlock(&pool_lock);
}}

const char *{name}_target(void) {{ return "{target}"; }}

const char *{name}_strerror(int code) {{
  switch (code) {{
    case 0: return "success";
{errors}
    default: return "unknown error code";
  }}
}}

int {name}_run(const void *const *inputs, void *const *outputs) {{
  void *p[{nslots}];
  if (!inputs && {n_in}) return {up}_ERR_NULL_INPUT;
  for (int i = 0; i < {n_in}; i++) if (!inputs[i]) return {up}_ERR_NULL_INPUT;
  if (!outputs) return {up}_ERR_NULL_OUTPUT;
  for (int i = 0; i < {n_out}; i++) if (!outputs[i]) return {up}_ERR_NULL_OUTPUT;
{cpu_check}  pthread_mutex_lock(&run_lock);
{slots}
{calls}
{copies}
  pthread_mutex_unlock(&run_lock);
  return {up}_OK;
}}
"""
