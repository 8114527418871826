"""A damaged, edited or foreign ``.mlcb`` file is one clear ArtifactError naming the member,
never a crash, a hang or silently wrong numbers. Every corruption is loaded in a separate
process, so a crash shows as that process's exit code instead of killing the test run."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, ArtifactError
from mlcbook.graph import Constant, Function, TensorType, Tuple, Var, op
from mlcbook.graph.run.artifact import MEMBERS, file_sha256, manifest_digest

X = np.random.default_rng(2).standard_normal((4, 12)).astype("float32")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((4, 12)))
    w = Constant(rng.standard_normal((12, 8)).astype("float32"), name="w")
    h = op.reshape(op.relu(op.matmul(x, w, name="fc")), shape=(4, 2, 4))
    exe = mb.compile(Function([x], Tuple([op.softmax(h), op.sum(h, axes=(2,), keepdims=0)])))
    path = tmp_path_factory.mktemp("artifact") / "m.mlcb"
    exe.save(path)
    return exe, path


def members_of(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def write(path, members: dict[str, bytes], fix_hashes: bool = True):
    """Zip ``members``; with ``fix_hashes`` the manifest records their new sizes and hashes
    (a forger's edit: only the structural checks can catch it)."""
    if fix_hashes and "manifest.json" in members:
        manifest = json.loads(members["manifest.json"])
        for name, data in members.items():
            if name in manifest["members"]:
                manifest["members"][name] = {"size": len(data),
                                             "sha256": hashlib.sha256(data).hexdigest()}
        manifest["sha256"] = manifest_digest(manifest)
        members = {**members, "manifest.json": json.dumps(manifest).encode()}
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            kind = zipfile.ZIP_STORED if name == "weights.bin" else zipfile.ZIP_DEFLATED
            z.writestr(name, data, kind)
    return path


def edit_json(members, name, change) -> dict[str, bytes]:
    obj = json.loads(members[name])
    change(obj)
    return {**members, name: json.dumps(obj).encode()}


def flip(data: bytes, at: float = 0.5) -> bytes:
    k = int(len(data) * at)
    return data[:k] + bytes([data[k] ^ 0x5A]) + data[k + 1:]


def foreign_mlcbook_object() -> bytes:
    """An object mlcbook compiled for another architecture."""
    k = mb.build(mb.te.create_prim_func(_add_te()), target="llvm -mtriple=aarch64-linux-gnu")
    return k.object_code()


def _add_te():
    a = mb.te.placeholder((4,), "float32", name="A")
    return [a, mb.te.compute((4,), lambda i: a[i] + 1.0, name="B")]


def other_object() -> bytes:
    """An object for this machine that mlcbook did not write."""
    import llvmlite.binding as llvm
    tm = llvm.Target.from_default_triple().create_target_machine()
    return tm.emit_object(llvm.parse_assembly(
        "declare i32 @system(ptr)\ndefine void @f() { call i32 @system(ptr null) ret void }"))


def corruptions(src, d) -> list[tuple[str, object, str]]:
    """``(case, path, expected text of the message)``: the table of the issue."""
    m = members_of(src)
    raw = src.read_bytes()
    cases = []

    def add(case, members, expect, fix_hashes=True):
        cases.append((case, write(d / f"{len(cases)}.mlcb", members, fix_hashes), expect))

    def slot(k, **fields):
        return lambda p: p["slots"][k].update(fields)

    plan = json.loads(m["plan.json"])
    temp = next(k for k, s in enumerate(plan["slots"]) if s["kind"] == "temp")
    const = next(k for k, s in enumerate(plan["slots"]) if s["kind"] == "const")
    view = next(k for k, s in enumerate(plan["slots"]) if s["kind"] == "view")
    add("junk object", {**m, "kernels.o": bytes(range(256)) * 20}, "kernels.o is not a usable")
    add("foreign object (aarch64)", {**m, "kernels.o": foreign_mlcbook_object()},
        "machine 'aarch64'")
    add("foreign object (not mlcbook's)", {**m, "kernels.o": other_object()},
        "kernels.o defines other symbols")
    add("object truncated (hash fixed)", {**m, "kernels.o": m["kernels.o"][:3000]},
        "kernels.o is not a usable")
    add("shrunk temp", edit_json(m, "plan.json", slot(temp, shape=[2, 8])),
        "plan.json is inconsistent")
    add("wrong weight shape", edit_json(m, "plan.json", slot(const, shape=[6, 8])),
        "plan.json is inconsistent")
    add("weights shortened (hash fixed)", {**m, "weights.bin": m["weights.bin"][:100]},
        "weights.bin has 100 bytes")
    add("edited weights", {**m, "weights.bin": flip(m["weights.bin"], 0.3)},
        "weights.bin does not match its checksum", fix_hashes=False)
    add("manifest edited (self-hash stale)", edit_json(
        m, "manifest.json", lambda d: d["target"].update(cpu="generic")),
        "manifest.json does not match its own checksum", fix_hashes=False)
    add("view cycle", edit_json(m, "plan.json", slot(view, ref=view)), "not an earlier slot")
    # a temp without its place in the arena would be passed to its kernel as NULL
    add("temp without an arena offset", edit_json(
        m, "plan.json", lambda p: p.update(offsets=p["offsets"][1:])), "has no arena offset")
    add("every arena offset dropped but the last", edit_json(
        m, "plan.json", lambda p: p.update(offsets=p["offsets"][-1:])), "has no arena offset")
    add("temp offset past the arena", edit_json(
        m, "plan.json", lambda p: p["offsets"][0].__setitem__(1, p["arena_bytes"])),
        "does not fit in the arena")
    add("temp offset before the arena", edit_json(
        m, "plan.json", lambda p: p["offsets"][0].__setitem__(1, -64)),
        "does not fit in the arena")
    add("kernel signature edited", edit_json(
        m, "kernels.json", lambda ks: ks[0]["params"][0].__setitem__(1, [1])), "")
    add("zip bomb", {**m, "plan.json": b" " * (48 << 20)}, "plan.json claims")
    add("wrong version", edit_json(m, "manifest.json", lambda d: d.update(version=1)),
        "format version 1")
    add("CPU features this CPU lacks", edit_json(
        m, "manifest.json", lambda d: d["target"].update(features="+mlcb-imaginary")),
        "+mlcb-imaginary")
    add("other architecture", edit_json(
        m, "manifest.json", lambda d: d["target"].update(triple="aarch64-unknown-linux-gnu")),
        "compiled for aarch64")
    add("extra member (path traversal)", {**m, "../evil.so": b"x"}, "unexpected")
    add("format 1 (weights.npz)", {**{k: v for k, v in m.items() if k != "weights.bin"},
                                   "weights.npz": m["weights.bin"]}, "weights.npz")
    for name in MEMBERS:
        add(f"{name} missing", {k: v for k, v in m.items() if k != name},
            f"lacks the member {name}")
        add(f"{name} truncated", {**m, name: m[name][:len(m[name]) // 2]}, name, fix_hashes=False)
        add(f"{name} flipped", {**m, name: flip(m[name])}, name, fix_hashes=False)
    # a flip inside the compressed stream of the zip itself
    with zipfile.ZipFile(src) as z:
        info = z.getinfo("kernels.o")
    at = info.header_offset + 30 + len(info.filename) + info.compress_size // 2
    (d / "stream.mlcb").write_bytes(raw[:at] + bytes([raw[at] ^ 0xFF]) + raw[at + 1:])
    cases.append(("compressed stream flipped", d / "stream.mlcb", "kernels.o"))
    (d / "short.mlcb").write_bytes(raw[:len(raw) // 2])
    cases.append(("file truncated", d / "short.mlcb", "not an mlcbook compiled model"))
    (d / "junk.mlcb").write_bytes(b"\x00junk" * 100)
    cases.append(("not a zip", d / "junk.mlcb", "not an mlcbook compiled model"))
    (d / "dir.mlcb").mkdir()
    cases.append(("a directory", d / "dir.mlcb", "is a directory"))
    return cases


LOADER = r"""
import json, sys, time
import mlcbook as mb
for case, path, pin in json.loads(sys.argv[1]):
    print(json.dumps({"case": case, "start": True}), flush=True)
    t0 = time.perf_counter()
    try:
        exe = mb.load(path, expected_sha256=pin)
        result = {"error": None, "out": exe(__import__("numpy").ones((4, 12), "float32"))[1].tolist()}
    except Exception as e:
        result = {"error": type(e).__name__, "message": str(e)}
    result.update(case=case, seconds=time.perf_counter() - t0)
    print(json.dumps(result), flush=True)
"""


def load_in_subprocess(cases) -> dict[str, dict]:
    arg = json.dumps([[c, str(p), pin] for c, p, pin in cases])
    proc = subprocess.run([sys.executable, "-c", LOADER, arg], capture_output=True, text=True,
                          timeout=300)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    last = lines[-1]["case"] if lines else None
    assert proc.returncode == 0, f"the loader process died ({proc.returncode}) at {last!r}: " \
                                 f"{proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return {r["case"]: r for r in lines if "start" not in r}


def test_every_corruption_is_one_clear_error_and_no_crash(saved, tmp_path):
    _, src = saved
    cases = corruptions(src, tmp_path)
    results = load_in_subprocess([(c, p, None) for c, p, _ in cases])
    for case, _, expect in cases:
        r = results[case]
        assert r["error"] == "ArtifactError", (case, r)
        assert r["message"].startswith("[MLC-C007]") and expect in r["message"], (case, r)
        assert r["seconds"] < 5, (case, r["seconds"])


def test_a_pinned_hash_refuses_any_other_file(saved, tmp_path):
    # a forger who edits the machine code and rewrites the manifest's hashes passes every
    # structural check (the code would run); only the hash pinned at save time stops it
    exe, src = saved
    m = members_of(src)
    forged = write(tmp_path / "forged.mlcb", {**m, "kernels.o": flip(m["kernels.o"], 0.02)})
    other = write(tmp_path / "other.mlcb", m)   # same content, other bytes
    results = load_in_subprocess([("forged code", forged, exe.artifact_sha256),
                                  ("other file", other, exe.artifact_sha256),
                                  ("the saved file", src, exe.artifact_sha256)])
    assert "not the pinned" in results["forged code"]["message"]
    assert "not the pinned" in results["other file"]["message"]
    assert results["the saved file"]["error"] is None
    assert exe.artifact_sha256 == file_sha256(src)


def test_the_intact_artifact_loads_and_matches(saved, tmp_path):
    exe, src = saved
    loaded = mb.load(src, expected_sha256=exe.artifact_sha256)
    for a, b in zip(loaded(X), exe(X)):
        np.testing.assert_array_equal(a, b)
    again = loaded.save(tmp_path / "again.mlcb")       # a loaded model saves again,
    assert file_sha256(again) == exe.artifact_sha256   # to the very same bytes
    np.testing.assert_array_equal(mb.load(again)(X)[0], exe(X)[0])


def test_loading_an_empty_model_needs_no_object(tmp_path):
    x = Var("x", TensorType((3,)))
    f = Function([x], Tuple([x, Constant(np.arange(2, dtype="int64"))]))
    path = mb.compile(f).save(tmp_path / "empty.mlcb")
    a, b = mb.load(path)(np.ones(3, "float32"))
    assert a.tolist() == [1, 1, 1] and b.tolist() == [0, 1]
    m = members_of(path)
    write(tmp_path / "code.mlcb", {**m, "kernels.o": b"\x7fELF"})
    with pytest.raises(ArtifactError, match="kernels.o holds code"):
        mb.load(tmp_path / "code.mlcb")


def test_cli_run_reports_a_damaged_artifact_in_one_line(saved, tmp_path):
    _, src = saved
    np.save(tmp_path / "x.npy", X)
    junk = write(tmp_path / "junk.mlcb", {**members_of(src), "kernels.o": b"\x7fELF" * 50})
    (tmp_path / "dir.mlcb").mkdir()
    (tmp_path / "zip.mlcb").write_bytes(b"PK\x03\x04 corrupt")
    for artifact in (junk, tmp_path / "dir.mlcb", tmp_path / "zip.mlcb"):
        proc = subprocess.run([sys.executable, "-m", "mlcbook", "run", str(artifact), "-i",
                               str(tmp_path / "x.npy")], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith("mlcbook run: error: [MLC-C007]"), proc.stderr
        assert "Traceback" not in proc.stderr


def test_cli_run_checks_a_pinned_hash(saved, tmp_path):
    exe, src = saved
    np.save(tmp_path / "x.npy", X)
    base = [sys.executable, "-m", "mlcbook", "run", str(src), "-i", str(tmp_path / "x.npy")]
    bad = subprocess.run(base + ["--sha256", "0" * 64], capture_output=True, text=True)
    assert bad.returncode == 1 and "not the pinned" in bad.stderr
    good = subprocess.run(base + ["--sha256", exe.artifact_sha256], capture_output=True,
                          text=True)
    assert good.returncode == 0, good.stderr


def test_an_executable_cannot_be_pickled(saved):
    import copy
    import pickle
    with pytest.raises(ArtifactError, match=r"Instead: exe.save\(path\)"):
        pickle.dumps(saved[0])
    with pytest.raises(ArtifactError, match="cannot be pickled"):
        copy.deepcopy(saved[0])


def test_an_arena_larger_than_the_machine_can_map_is_an_argument_error(saved, tmp_path):
    # the largest arena the plan check allows (2**48 bytes): the OS refuses the mapping, and
    # that is the same clear error as a model too big for memory, not a raw OSError
    _, src = saved
    members = edit_json(members_of(src), "plan.json",
                        lambda p: p.update(arena_bytes=1 << 48))
    with pytest.raises(ArgumentError, match=r"\[MLC-A001\] the model's intermediate buffers "
                                            r"need 262144\.0 GiB, more memory than this"):
        mb.load(write(tmp_path / "huge.mlcb", members))
