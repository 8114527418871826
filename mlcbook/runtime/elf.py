"""Read a relocatable ELF object file in Python, before LLVM's loader sees it.

LLVM's runtime linker trusts the object it is given: a truncated section table, a symbol
that points past its section or a relocation that writes outside its section crash the
process. :func:`check_object` reads the headers, sections, symbols and relocations of a
64-bit little-endian object and raises :class:`~mlcbook.errors.ArtifactError` for anything
out of bounds, for a machine other than the expected one, and for symbols other than the
expected kernels, so that only well-formed objects that define exactly those kernels reach
LLVM. It is a shape check, not a proof the code is benign: a crafted object can hold any
machine code. Pin the artifact's hash to trust its content.

    >>> info = check_object(data, machine="x86_64", member="kernels.o")
    >>> info.defined            # global symbols the object defines
    {'mlcb_add': 'func', 'mlcb_meta': 'object'}
    >>> info.read_symbol("mlcb_meta")        # bytes of a defined data symbol
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..errors import ArtifactError

#: ELF ``e_machine`` of the architectures LLVM's JIT runs here, by triple prefix
MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183, "riscv64": 243, "ppc64le": 21}

#: relocation types RuntimeDyld implements that LLVM emits for mlcbook's code (others abort it)
_RELOCATIONS = {62: {1, 2, 4, 9, 10, 11, 24, 41, 42}}

_SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS, _SHT_REL = 2, 4, 8, 9
_SHN_UNDEF, _SHN_LORESERVE = 0, 0xFF00
_STB_LOCAL = 0
_TYPES = {0: "notype", 1: "object", 2: "func", 3: "section", 4: "file"}


@dataclass
class ObjectInfo:
    """What :func:`check_object` found: global ``defined`` symbols (name -> type) and
    ``undefined`` ones (what the object needs from libraries)."""

    data: bytes
    defined: dict = field(default_factory=dict)
    undefined: set = field(default_factory=set)
    _where: dict = field(default_factory=dict)     # name -> (file offset, size)

    def read_symbol(self, name: str) -> bytes:
        off, size = self._where[name]
        return self.data[off:off + size]


def check_object(data: bytes, machine: str, member: str) -> ObjectInfo:
    """Check that ``data`` is a well-formed relocatable ELF64 object for ``machine`` (a
    triple's architecture, e.g. ``x86_64``); raise ArtifactError naming ``member`` if not."""

    def bad(why: str) -> ArtifactError:
        return ArtifactError(f"{member} is not a usable object file: {why}; the artifact is "
                             "damaged or was not written by mlcbook: compile the model again")

    def unpack(fmt: str, off: int):
        if off < 0 or off + struct.calcsize(fmt) > len(data):
            raise bad("a header points past the end of the file")
        return struct.unpack_from(fmt, data, off)

    if data[:4] != b"\x7fELF":
        raise bad("it does not start with the ELF magic bytes")
    if data[4:6] != b"\x02\x01":
        raise bad("it is not a 64-bit little-endian ELF file")
    (e_type, e_machine, _, _, _, e_shoff, _, _, _, _, e_shentsize, e_shnum,
     e_shstrndx) = unpack("<HHIQQQIHHHHHH", 16)
    want = MACHINES.get(machine)
    if want is None or e_machine != want:
        names = {v: k for k, v in reversed(MACHINES.items())}
        raise bad(f"it holds code for machine {names.get(e_machine, e_machine)!r}, "
                  f"not for {machine!r} as the artifact says")
    if e_type != 1:
        raise bad(f"it is not a relocatable object (ELF type {e_type})")
    if e_shentsize != 64 or not 0 < e_shnum < 65536 or e_shstrndx >= e_shnum:
        raise bad("its section header table is malformed")
    sections = [unpack("<IIQQQQIIQQ", e_shoff + 64 * k) for k in range(e_shnum)]
    for k, (_, kind, _, _, off, size, *_rest) in enumerate(sections):
        if kind != _SHT_NOBITS and off + size > len(data):
            raise bad(f"section {k} runs past the end of the file")
    info = ObjectInfo(data)
    symtabs = [k for k, s in enumerate(sections) if s[1] == _SHT_SYMTAB]
    if len(symtabs) != 1:
        raise bad(f"it has {len(symtabs)} symbol tables, not one")
    nsyms = _symbols(data, sections, symtabs[0], info, bad)
    for k, (_, kind, _, _, off, size, link, target, _, entsize) in enumerate(sections):
        if kind == _SHT_REL:
            raise bad("it has REL relocations (mlcbook objects use RELA)")
        if kind != _SHT_RELA:
            continue
        if entsize != 24 or size % 24 or link != symtabs[0] or not 0 < target < e_shnum:
            raise bad(f"relocation section {k} is malformed")
        limit, known = sections[target][5], _RELOCATIONS.get(e_machine)
        for r in range(size // 24):
            r_offset, r_info, _ = struct.unpack_from("<QQq", data, off + 24 * r)
            if r_info >> 32 >= nsyms or r_offset + 8 > limit:
                raise bad(f"relocation {r} of section {k} points outside its section")
            if known is not None and r_info & 0xFFFFFFFF not in known:
                raise bad(f"relocation {r} of section {k} has type {r_info & 0xFFFFFFFF}, "
                          "which mlcbook never emits")
    return info


def _symbols(data, sections, index, info: ObjectInfo, bad) -> int:
    _, _, _, _, off, size, link, _, _, entsize = sections[index]
    if entsize != 24 or size % 24 or not 0 < link < len(sections):
        raise bad("its symbol table is malformed")
    str_off, str_size = sections[link][4], sections[link][5]
    nsyms = size // 24
    for k in range(nsyms):
        st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from(
            "<IBBHQQ", data, off + 24 * k)
        if st_name >= max(str_size, 1):
            raise bad(f"symbol {k} has its name outside the string table")
        end = data.find(b"\0", str_off + st_name, str_off + str_size)
        if end < 0:
            raise bad(f"symbol {k} has an unterminated name")
        name = data[str_off + st_name:end].decode("ascii", "replace")
        if st_shndx != _SHN_UNDEF and st_shndx < _SHN_LORESERVE:
            if st_shndx >= len(sections):
                raise bad(f"symbol {name!r} is in section {st_shndx}, which does not exist")
            sec = sections[st_shndx]
            if st_value + st_size > sec[5]:
                raise bad(f"symbol {name!r} runs past the end of its section")
            if sec[1] != _SHT_NOBITS:
                info._where[name] = (sec[4] + st_value, st_size)
        if st_info >> 4 == _STB_LOCAL:
            continue
        if st_shndx == _SHN_UNDEF:
            info.undefined.add(name)
        else:
            info.defined[name] = _TYPES.get(st_info & 0xF, "other")
    return nsyms
