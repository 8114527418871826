"""Checkers for chapter 11, *Deployment*: a C caller of an exported model, a target for a
fleet of CPUs, and telling a damaged export from a good one.

Each checker builds what it judges afresh: a small model exported under a freshly drawn
name and sizes (the student's C program is compiled against its header with ``cc`` and run
without Python; then against a stand-in library whose run fails, to see it report the
error and exit with its code), fleets of CPUs drawn from the x86-64 levels with odd machines among them,
and copies of an export damaged in several ways.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..codegen.target import X86_LEVELS, Target
from ..errors import MLCError
from .compare import Fail, call, expect_array, randn, trial
from .registry import exercise

#: the x86-64 levels from the oldest CPUs to the newest, each with the features it adds up to
LEVELS = {"x86-64": [], **X86_LEVELS}


def _compile_mlp(sizes: tuple[int, ...], batch: int, seed: int):
    from ..frontend import examples, from_onnx
    from ..graph import compile as compile_model
    return compile_model(from_onnx(examples.mlp(batch=batch, sizes=sizes, seed=seed)))


def _need_cc() -> None:
    if shutil.which("cc") is None:
        raise Fail("there is no C compiler `cc` on this machine, so the program cannot be "
                   "built; install one (Debian: apt-get install gcc) and check again",
                   about_inputs=False)


# --- 11.c_caller -----------------------------------------------------------------------------
def _build_caller(source: str, folder: Path, name: str) -> Path:
    (folder / "main.c").write_text(source)
    program = folder / "main"
    proc = subprocess.run(["cc", "-O1", "-I", str(folder), "main.c", "-o", str(program),
                           f"-L{folder}", f"-l{name}", f"-Wl,-rpath,{folder}"], cwd=folder,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise Fail(f"cc could not build your program:\n{proc.stderr.strip()[-900:]}",
                   "include the header as #include \"NAME.h\" and use its names: NAME_run, "
                   "NAME_INPUT0_SIZE, NAME_OUTPUT0_SIZE")
    return program


#: A stand-in for an exported library whose run always fails with ``code``: what the
#: program must do then is print ``NAME_strerror(code)`` to stderr and exit with ``code``.
_FAILING_LIB = r"""#include "{name}.h"
int {name}_run(const void *const *inputs, void *const *outputs) {{
  (void)inputs; (void)outputs;
  return {code};
}}
const char *{name}_strerror(int code) {{
  return code == {code} ? "{message}" : "an unexpected code";
}}
const char *{name}_target(void) {{ return "failing stand-in"; }}
void {name}_set_num_threads(int n) {{ (void)n; }}
"""


def _check_failure_path(answer_source: str, export: Path, name: str, rng, x) -> None:
    """Build the program against a library whose run fails; it must report and exit."""
    code = int(rng.integers(1, 5))
    message = f"the stand-in run failed with code {code}"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(export / f"{name}.h", folder / f"{name}.h")
        (folder / "lib.c").write_text(_FAILING_LIB.format(name=name, code=code, message=message))
        built = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / f"lib{name}.so"),
                                "lib.c"], cwd=folder, capture_output=True, text=True)
        if built.returncode != 0:
            raise RuntimeError(f"cannot build the failing stand-in library: {built.stderr}")
        program = _build_caller(answer_source, folder, name)
        proc = subprocess.run(["env", "-i", str(program)], input=x.tobytes(),
                              capture_output=True, timeout=60)
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != code:
        raise Fail(f"when {name}_run returns the error code {code}, your program exits with "
                   f"status {proc.returncode}",
                   f"check what {name}_run returns; if it is not {name.upper()}_OK, exit with "
                   "that code")
    if message not in stderr:
        raise Fail(f"when {name}_run fails, your program's stderr is {stderr.strip()[-200:]!r}; "
                   f"it should print {name}_strerror(code), here {message!r}")


@exercise("11.c_caller", points=3, answer="c_caller",
          title="A C program that runs an exported model")
def _check_c_caller(answer, rng):
    _need_cc()
    for k in range(2):
        name = f"net{int(rng.integers(10, 99))}_{k}"
        batch = int(rng.integers(1, 5))
        sizes = (int(rng.integers(3, 40)), int(rng.integers(4, 24)), int(rng.integers(2, 9)))
        with trial(f"model {name!r}: an MLP {sizes}, batch {batch}"), \
                tempfile.TemporaryDirectory() as tmp:
            exe = _compile_mlp(sizes, batch, int(rng.integers(1000)))
            exe.export(tmp, name=name)
            source = call(answer, "c_caller", name)
            if not isinstance(source, str):
                raise Fail(f"c_caller should return the C program as a str, got "
                           f"{type(source).__name__}", about_inputs=False)
            program = _build_caller(source, Path(tmp), name)
            x = randn(rng, (batch, sizes[0]))
            # env -i: the program must run with nothing of Python's environment
            proc = subprocess.run(["env", "-i", str(program)], input=x.tobytes(),
                                  capture_output=True, timeout=60)
            if proc.returncode != 0:
                raise Fail(f"your program exited with status {proc.returncode}; stderr: "
                           f"{proc.stderr.decode(errors='replace').strip()[-300:]!r}")
            expected = exe(x)
            if len(proc.stdout) != expected.nbytes:
                raise Fail(f"your program wrote {len(proc.stdout)} bytes to stdout; expected "
                           f"the {expected.size} float32 outputs as {expected.nbytes} raw bytes",
                           "write the output array with fwrite (not printf), and size arrays "
                           f"with {name.upper()}_INPUT0_SIZE / {name.upper()}_OUTPUT0_SIZE")
            got = np.frombuffer(proc.stdout, np.float32).reshape(expected.shape)
            expect_array("the output it wrote", got, expected, rtol=0, atol=0)
        if k == 0:
            with trial(f"model {name!r} whose run fails"), \
                    tempfile.TemporaryDirectory() as tmp:
                exe.export(tmp, name=name)
                _check_failure_path(source, Path(tmp), name, rng, x)
    return ("built against two freshly exported models and run without Python: same outputs; "
            "a failing run is reported on stderr with its exit code")


# --- 11.fleet_target -------------------------------------------------------------------------
def _machine(rng, level: str, drop: str | None = None) -> frozenset:
    """A CPU's features (LLVM names without '+'): a level's, a few extras, maybe one less."""
    extras = ["aes", "pclmul", "sha", "rdrnd", "adx", "avx512vnni", "gfni"]
    feats = {f[1:] for f in LEVELS[level]} | {"sse", "sse2", "cmov", "cx8"}
    feats |= {str(f) for f in rng.choice(extras, size=int(rng.integers(0, 3)), replace=False)}
    if level == "x86-64-v4":
        feats.add("avx512vnni")
    feats.discard(drop)
    return frozenset(feats)


def best_level(fleet) -> str:
    """The newest x86-64 level every machine of ``fleet`` has all the features of."""
    common = frozenset.intersection(*map(frozenset, fleet))
    fits = [lv for lv, feats in LEVELS.items() if {f[1:] for f in feats} <= common]
    return fits[-1]


def _fleets(rng) -> list[list[frozenset]]:
    m = functools.partial(_machine, rng)
    return [[m("x86-64-v4"), m("x86-64-v3"), m("x86-64-v4")],
            [m("x86-64-v4"), m("x86-64-v4")],
            [m("x86-64-v3"), m("x86-64-v2"), m("x86-64-v4")],
            [m("x86-64-v4"), m("x86-64-v3", drop="fma")],          # an odd CPU: AVX2, no FMA
            [m("x86-64-v3"), m("x86-64")],
            [m(str(rng.choice(list(LEVELS)))) for _ in range(int(rng.integers(2, 6)))]]



@exercise("11.fleet_target", points=2, answer="choose_target",
          title="A target for a fleet of CPUs")
def _check_fleet_target(answer, rng):
    for fleet in _fleets(rng):
        best = best_level(fleet)
        with trial(f"a fleet of {len(fleet)} machines whose common newest level is {best}"):
            spec = call(answer, "choose_target", [set(f) for f in fleet])
            try:
                target = Target(spec)
            except MLCError as err:
                raise Fail(f"choose_target returned {spec!r}, which is not a target: {err}")
            if target.arch != "x86_64":
                raise Fail(f"{spec!r} is a target for {target.triple}; the fleet is x86-64")
            needs = {f[1:] for f in target.features.split(",") if f.startswith("+")}
            if not needs and target.cpu not in ("x86-64", "generic"):
                raise Fail(f"{spec!r} names the CPU {target.cpu!r} without its features, so "
                           "what the binary needs is not explicit",
                           "name an x86-64 level: 'llvm -mcpu=x86-64-v3' and the like")
            for k, machine in enumerate(fleet):
                lacking = sorted(needs - machine)
                if lacking:
                    raise Fail(f"{spec!r} uses {', '.join(lacking[:4])}, which machine {k} "
                               "lacks: the binary would stop there with an illegal instruction")
            wanted = {f[1:] for f in LEVELS[best]}
            if not wanted <= needs:
                raise Fail(f"{spec!r} runs on every machine but leaves out "
                           f"{', '.join(sorted(wanted - needs)[:4])}, which they all have: "
                           f"-mcpu={best} is the fastest code they all run")
    return "every fleet gets the newest level all its machines run, on six fleets"


# --- 11.verify_export ------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _export_once() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="mlcbook-ch11-"))
    _compile_mlp((12, 8, 3), 2, 7).export(folder, name="fleet")
    return folder


def _flip(path: Path, rng) -> None:
    data = bytearray(path.read_bytes())
    data[int(rng.integers(len(data) // 4, len(data)))] ^= 1 << int(rng.integers(8))
    path.write_bytes(bytes(data))


def _damages(rng):
    """(description, what to do to a copy of the export, the files that are then bad)."""
    return [("an intact copy", lambda d: None, []),
            ("one bit flipped in libfleet.so", lambda d: _flip(d / "libfleet.so", rng),
             ["libfleet.so"]),
            ("fleet.h cut short", lambda d: (d / "fleet.h").write_bytes(
                (d / "fleet.h").read_bytes()[:200]), ["fleet.h"]),
            ("libfleet.a deleted", lambda d: (d / "libfleet.a").unlink(), ["libfleet.a"]),
            ("a bit flipped in libfleet.a and in fleet.h",
             lambda d: (_flip(d / "libfleet.a", rng), _flip(d / "fleet.h", rng)),
             ["fleet.h", "libfleet.a"])]


@exercise("11.verify_export", points=2, answer="verify_export",
          title="Tell a damaged export from a good one")
def _check_verify_export(answer, rng):
    _need_cc()
    source = _export_once()
    cases = _damages(rng)
    for k in rng.permutation(len(cases)):
        what, damage, bad = cases[k]
        with trial(f"{what}"), tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "export"
            shutil.copytree(source, copy)
            damage(copy)
            got = call(answer, "verify_export", copy)
            if not isinstance(got, (list, tuple, set)) or not all(isinstance(n, str)
                                                                  for n in got):
                raise Fail(f"verify_export should return a list of file names, got {got!r:.80}",
                           about_inputs=False)
            if sorted(got) != bad:
                raise Fail(f"verify_export returned {sorted(got)}; expected {bad}",
                           "hash every file SHA256SUMS lists (hashlib.sha256 of its bytes) and "
                           "compare with the recorded digest; a missing file is damaged too")
    return "finds exactly the damaged files: flipped bits, truncation, a missing file, none"
