"""The ``.mlcb`` file of a compiled model, written by ``exe.save`` and read by ``mb.load``.

A zip archive of exactly these members (format version 2; no pickle anywhere)::

    manifest.json   format, version, target, the size and sha256 of every other member, and
                    a sha256 of itself
    plan.json       the run plan (slots and kernel calls, see :mod:`mlcbook.graph.memory.plan`)
    kernels.json    each kernel's entry point: symbol, parameter names, shapes, dtypes
    kernels.o       one relocatable object file with every kernel (native code)
    weights.bin     the weights, raw, in slot order, each at a 64-byte boundary (stored,
                    not compressed)

Loading checks everything before native code runs: member names, sizes (no member can
decompress beyond a fixed bound), every member's sha256, the version, that the code is for
this CPU, the plan against the kernels' signatures, the weights against the plan, and the
object file's structure and symbols (:mod:`mlcbook.runtime.elf`). Any failure is one
:class:`~mlcbook.errors.ArtifactError` naming the member.

**An artifact contains native code that runs with your rights: load only artifacts you
trust.** The checks catch damage and mistakes, not a forger, who can rewrite the manifest's
hashes too; to know that a file is the one you saved, pin its hash::

    >>> exe.save("m.mlcb"); pinned = exe.artifact_sha256      # or: mlcbook compile prints it
    >>> mb.load("m.mlcb", expected_sha256=pinned)
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
import zlib
from typing import Any, Mapping

import numpy as np

from ...codegen.llvm_module import META_SYMBOL, EntryInfo
from ...errors import ArtifactError, TargetError
from ..memory.plan import Plan, check_plan, parse_dtype, parse_shape

FORMAT = "mlcbook-executable"
VERSION = 2
#: members and the most bytes each may decompress to (weights.bin: its stored size)
MEMBERS = {"manifest.json": 1 << 20, "plan.json": 16 << 20, "kernels.json": 16 << 20,
           "kernels.o": 256 << 20, "weights.bin": None}
WEIGHT_ALIGN = 64
#: what a kernel may call outside itself: libm, and the helpers LLVM emits calls to
ALLOWED_IMPORTS = frozenset(
    [f + s for f in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt",
                     "pow", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "fmod",
                     "fmin", "fmax", "fabs", "tanh", "sinh", "cosh", "sin", "cos", "tan",
                     "asin", "acos", "atan", "atan2", "erf", "erfc", "sincos", "ldexp")
     for s in ("", "f")]
    + ["memset", "memcpy", "memmove", "__powisf2", "__powidf2", "__truncsfhf2",
       "__truncdfhf2", "__extendhfsf2", "__gnu_h2f_ieee", "__gnu_f2h_ieee"])
_SYMBOL = re.compile(r"mlcb_[A-Za-z0-9_]+\Z")


def write_artifact(path, plan: Plan, kernels: Mapping[str, Any],
                   consts: Mapping[int, np.ndarray]) -> str:
    """Write the archive; returns the sha256 of the whole file (hex)."""
    libs = list(kernels.values())
    obj = libs[0].object_code() if libs else b""
    target = libs[0].target if libs else None
    members = {
        "plan.json": json.dumps(plan.to_json()).encode(),
        "kernels.json": json.dumps([k.entry.to_json() for k in libs]).encode(),
        "kernels.o": obj,
        "weights.bin": _pack_weights(plan, consts),
    }
    manifest = {"format": FORMAT, "version": VERSION,
                "target": {"triple": target.triple, "cpu": target.cpu,
                           "features": target.features} if target else None,
                "members": {n: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                            for n, b in members.items()}}
    manifest["sha256"] = manifest_digest(manifest)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in {"manifest.json": json.dumps(manifest, indent=1).encode(),
                           **members}.items():
            # a fixed date: the same model always saves to the same bytes (and hash)
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED if name == "weights.bin" \
                else zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            z.writestr(info, data)
    data = buf.getvalue()
    with open(path, "wb") as f:
        f.write(data)
    return hashlib.sha256(data).hexdigest()


def read_artifact(path, expected_sha256: str | None = None):
    """Read and check an archive; returns ``(plan, kernels, consts, sha256)``."""
    from ...runtime.loader import load_object_code
    data, digest = _read_file(path, expected_sha256)
    members = _Members(path, data)
    manifest = _parse_json(members.read("manifest.json", MEMBERS["manifest.json"]),
                           "manifest.json")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArtifactError(f"manifest.json of {path!r} does not describe an mlcbook compiled "
                            "model; write one with exe.save(path)")
    if manifest.get("version") != VERSION:
        raise ArtifactError(f"{path!r} has format version {manifest.get('version')!r}; this "
                            f"mlcbook reads version {VERSION}: compile the model again")
    if manifest.get("sha256") != manifest_digest(manifest):
        raise ArtifactError("manifest.json does not match its own checksum: it was changed or "
                            "damaged after saving; compile the model again")
    declared = manifest.get("members")
    content = {name: members.checked(name, declared) for name in MEMBERS
               if name != "manifest.json"}
    plan = Plan.from_json(_parse_json(content["plan.json"], "plan.json"))
    entries = _entries(_parse_json(content["kernels.json"], "kernels.json"))
    check_plan(plan, entries)
    consts = _unpack_weights(plan, content["weights.bin"])
    obj = content["kernels.o"]
    if not entries:
        if obj:
            raise ArtifactError("kernels.o holds code but kernels.json lists no kernel")
        return plan, {}, consts, digest
    target = _check_target(manifest.get("target"))
    _check_object(obj, target, entries)
    return plan, load_object_code(obj, list(entries.values()), target), consts, digest


def manifest_digest(manifest: dict) -> str:
    """The checksum a manifest records of itself: sha256 of its other fields (canonical JSON)."""
    body = {k: v for k, v in manifest.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def file_sha256(path) -> str:
    """The sha256 (hex) of a file, e.g. to pin with ``mb.load(path, expected_sha256=...)``."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# --- reading, one check at a time ------------------------------------------------------------
def _read_file(path, expected: str | None) -> tuple[bytes, str]:
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ArtifactError(f"no compiled model at {path!r}; write one with exe.save(path)")
    if not os.path.isfile(path):
        raise ArtifactError(f"{path!r} is a directory, not a compiled model (.mlcb file)")
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ArtifactError(f"cannot read {path!r}: {e.strerror or e}") from None
    digest = hashlib.sha256(data).hexdigest()
    if expected is not None and digest != str(expected).lower():
        raise ArtifactError(f"{path!r} has sha256 {digest}, not the pinned {expected}: it is "
                            "not the artifact you expected; do not load it")
    return data, digest


class _Members:
    """The members of the archive, each read with a bound on its decompressed size."""

    def __init__(self, path, data: bytes):
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as e:
            raise ArtifactError(f"{path!r} is not an mlcbook compiled model ({e}); write one "
                                "with exe.save(path)") from None
        names = [i.filename for i in self._zip.infolist()]
        extra = sorted(set(names) - set(MEMBERS))
        if extra or len(names) != len(set(names)):
            raise ArtifactError(f"{path!r} has unexpected or repeated members "
                                f"{', '.join(extra or names)}; an mlcbook model has exactly "
                                f"{', '.join(MEMBERS)}")
        missing = [n for n in MEMBERS if n not in names]
        if missing:
            raise ArtifactError(f"{path!r} lacks the member {', '.join(missing)}; the artifact "
                                "is damaged: compile the model again")
        self._infos = {i.filename: i for i in self._zip.infolist()}

    def read(self, name: str, limit: int) -> bytes:
        info = self._infos[name]
        if info.file_size > limit:
            raise ArtifactError(f"{name} claims {info.file_size} bytes, more than the {limit} "
                                "it may have (a zip bomb?); the artifact is damaged")
        try:
            with self._zip.open(info) as f:
                data = f.read(limit + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError,
                ValueError) as e:
            raise ArtifactError(f"{name} cannot be read ({type(e).__name__}: {e}); the "
                                "artifact is damaged: compile the model again") from None
        if len(data) > limit:
            raise ArtifactError(f"{name} decompresses to more than {limit} bytes (a zip "
                                "bomb?); the artifact is damaged")
        return data

    def checked(self, name: str, declared) -> bytes:
        """A member whose size and sha256 match the manifest's record."""
        entry = declared.get(name) if isinstance(declared, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("size"), int) \
                or not isinstance(entry.get("sha256"), str):
            raise ArtifactError(f"manifest.json records no size and sha256 for {name}; the "
                                "artifact is damaged: compile the model again")
        info, limit = self._infos[name], MEMBERS[name]
        if info.file_size != entry["size"]:
            raise ArtifactError(f"{name} has {info.file_size} bytes but manifest.json records "
                                f"{entry['size']}: it was changed or damaged after saving; "
                                "compile the model again")
        if limit is None:      # stored, not compressed: bounded by the file's own size
            if info.compress_type != zipfile.ZIP_STORED:
                raise ArtifactError(f"{name} is compressed; mlcbook stores it as is")
            limit = info.compress_size
        data = self.read(name, limit)
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != entry["size"] or digest != entry["sha256"]:
            raise ArtifactError(f"{name} does not match its checksum in manifest.json ({len(data)}"
                                f" bytes, sha256 {digest[:16]}...): it was changed or damaged "
                                "after saving; compile the model again")
        return data


def _parse_json(data: bytes, name: str):
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise ArtifactError(f"{name} is not valid JSON ({type(e).__name__}); the artifact is "
                            "damaged: compile the model again") from None


def _entries(obj) -> dict[str, EntryInfo]:
    try:
        entries = [EntryInfo.from_json(d) for d in obj]
        for e in entries:
            if not isinstance(e.name, str) or not _SYMBOL.match(str(e.symbol)) \
                    or not isinstance(e.num_outputs, int) \
                    or not 0 < e.num_outputs <= len(e.params):
                raise ValueError(f"entry {e.name!r}")
            for p in e.params:
                parse_shape(p.shape), parse_dtype(p.dtype)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise ArtifactError(f"kernels.json is malformed ({type(e).__name__}); the artifact is "
                            "damaged: compile the model again") from None
    names = {e.name: e for e in entries}
    if len(names) != len(entries) or len({e.symbol for e in entries}) != len(entries):
        raise ArtifactError("kernels.json lists a kernel twice; the artifact is damaged")
    return names


def _check_target(recorded):
    from ...codegen.target import Target
    if not isinstance(recorded, dict) or not all(
            isinstance(recorded.get(k), str) for k in ("triple", "cpu", "features")):
        raise ArtifactError("manifest.json records no target (triple, cpu, features) for "
                            "kernels.o; the artifact is damaged: compile the model again")
    host = Target()
    if recorded["triple"].split("-")[0] != host.triple.split("-")[0]:
        raise ArtifactError(f"kernels.o was compiled for {recorded['triple']}, and this machine "
                            f"is {host.triple}: compile the model again here")
    have = set(host.features.split(","))   # the host CPU's own features, +f and -f
    lacking = sorted(f for f in recorded["features"].split(",")
                     if f.startswith("+") and f not in have)
    if lacking:
        raise ArtifactError(f"kernels.o was compiled for a CPU ({recorded['cpu']}) with "
                            f"{', '.join(lacking[:6])}, which this CPU lacks; its code would "
                            "stop on an illegal instruction: compile the model again here")
    try:
        return Target(f"llvm -mtriple={recorded['triple']} -mcpu={recorded['cpu']}"
                      + (f" -mattr={recorded['features']}" if recorded["features"] else ""))
    except TargetError as e:
        raise ArtifactError(f"manifest.json records the target {recorded} that LLVM does not "
                            f"know ({e})") from None


def _check_object(obj: bytes, target, entries: Mapping[str, EntryInfo]) -> None:
    from ...runtime.elf import check_object
    info = check_object(obj, target.triple.split("-")[0], "kernels.o")
    want = {e.symbol: "func" for e in entries.values()}
    want[META_SYMBOL] = "object"
    if info.defined != want:
        odd = sorted(set(info.defined) ^ set(want)) or sorted(want)
        raise ArtifactError(f"kernels.o defines other symbols than the kernels of kernels.json "
                            f"(differ: {', '.join(odd[:6])}); it is not this model's object "
                            "file: compile the model again")
    imports = sorted(info.undefined - ALLOWED_IMPORTS)
    if imports:
        raise ArtifactError(f"kernels.o calls {', '.join(imports[:6])}, which mlcbook's code "
                            "never calls; it is not this model's object file")
    meta = info.read_symbol(META_SYMBOL).rstrip(b"\0")
    try:
        described = json.loads(meta.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        described = None
    if not isinstance(described, list) or sorted(map(json.dumps, described)) != sorted(
            json.dumps(e.to_json()) for e in entries.values()):
        raise ArtifactError("kernels.o describes other entry points than kernels.json; it is "
                            "not this model's object file: compile the model again")


# --- weights -------------------------------------------------------------------------------
def _weight_layout(plan: Plan) -> tuple[list[tuple[int, int, int]], int]:
    """``[(slot, offset, nbytes)]`` of the weights in weights.bin, and its size."""
    layout, end = [], 0
    for i, s in enumerate(plan.slots):
        if s.kind == "const":
            off = -(-end // WEIGHT_ALIGN) * WEIGHT_ALIGN
            layout.append((i, off, s.nbytes))
            end = off + s.nbytes
    return layout, end


def _pack_weights(plan: Plan, consts: Mapping[int, np.ndarray]) -> bytes:
    layout, size = _weight_layout(plan)
    out = bytearray(size)
    for slot, off, nbytes in layout:
        out[off:off + nbytes] = np.ascontiguousarray(consts[slot],
                                                     plan.slots[slot].dtype).tobytes()
    return bytes(out)


def _unpack_weights(plan: Plan, data: bytes) -> dict[int, np.ndarray]:
    layout, size = _weight_layout(plan)
    if len(data) != size:
        raise ArtifactError(f"weights.bin has {len(data)} bytes but the plan's weights take "
                            f"{size}; the artifact is damaged or was edited")
    raw = np.frombuffer(data, np.uint8)
    return {slot: raw[off:off + nbytes].view(plan.slots[slot].dtype).reshape(
        plan.slots[slot].shape) for slot, off, nbytes in layout}
