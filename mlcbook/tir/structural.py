"""Structural equality and hashing of loop IR, up to consistent renaming of variables and buffers.

Two programs are structurally equal when they have the same shape of nodes, the same
constants, dtypes and block names, and their variables and buffers correspond one to one
(``i`` in one may be called ``ax0`` in the other). Function names are not compared;
module keys are.

    >>> structural_equal(f, parse(str(f)))
    True
"""

from __future__ import annotations

import hashlib
from dataclasses import fields

from ..errors import StructuralMismatchError
from .expr import Buffer, Const, Var
from .function import IRModule, PrimFunc
from .functor import is_node


class _Mismatch(Exception):
    def __init__(self, path: list[str], a, b, why: str):
        self.path, self.a, self.b, self.why = list(path), a, b, why


class _Equal:
    def __init__(self):
        self.fwd: dict[int, object] = {}
        self.bwd: dict[int, object] = {}
        self.path: list[str] = []
        # keep mapped objects alive so that their ids stay unique during the comparison
        self._keep: list = []

    def fail(self, a, b, why):
        raise _Mismatch(self.path, a, b, why)

    def bind(self, a, b) -> None:
        fa, fb = self.fwd.get(id(a)), self.bwd.get(id(b))
        if fa is None and fb is None:
            self.fwd[id(a)], self.bwd[id(b)] = b, a
            self._keep += [a, b]
        elif fa is not b or fb is not a:
            self.fail(a, b, "variables or buffers do not correspond one to one")

    def eq(self, a, b) -> None:
        if type(a) is not type(b):
            self.fail(a, b, f"{type(a).__name__} vs {type(b).__name__}")
        if isinstance(a, Var):
            if a.dtype != b.dtype:
                self.fail(a, b, f"dtype {a.dtype} vs {b.dtype}")
            self.bind(a, b)
        elif isinstance(a, Buffer):
            if (a.shape, a.dtype, a.scope) != (b.shape, b.dtype, b.scope):
                self.fail(a, b, f"buffer {a.name}{list(a.shape)} {a.dtype} ({a.scope}) vs "
                                f"{b.name}{list(b.shape)} {b.dtype} ({b.scope})")
            self.bind(a, b)
        elif isinstance(a, Const):
            if a.dtype != b.dtype or not _same_value(a.value, b.value):
                self.fail(a, b, f"constant {a.value!r} ({a.dtype}) vs {b.value!r} ({b.dtype})")
        elif isinstance(a, IRModule):
            if sorted(a.functions) != sorted(b.functions):
                self.fail(a, b, f"functions {sorted(a.functions)} vs {sorted(b.functions)}")
            for name in sorted(a.functions):
                self.path.append(f"[{name!r}]")
                self.eq(a.functions[name], b.functions[name])
                self.path.pop()
        elif isinstance(a, tuple):
            if len(a) != len(b):
                self.fail(a, b, f"{len(a)} items vs {len(b)}")
            for k, (x, y) in enumerate(zip(a, b)):
                self.path.append(f"[{k}]")
                self.eq(x, y)
                self.path.pop()
        elif is_node(a) or isinstance(a, PrimFunc) or _is_dataclass_node(a):
            for f in fields(a):
                if not f.init or (isinstance(a, PrimFunc) and f.name == "name"):
                    continue
                self.path.append("." + f.name)
                self.eq(getattr(a, f.name), getattr(b, f.name))
                self.path.pop()
        elif a != b:
            self.fail(a, b, f"{a!r} vs {b!r}")


def _is_dataclass_node(x) -> bool:
    return hasattr(type(x), "__dataclass_fields__")


def _same_value(x, y) -> bool:
    return x == y or (x != x and y != y)  # nan equals nan structurally


def structural_equal(a, b) -> bool:
    """True when ``a`` and ``b`` (PrimFuncs, modules, statements or expressions) are the
    same program up to renaming of variables and buffers."""
    try:
        _Equal().eq(a, b)
        return True
    except _Mismatch:
        return False


def assert_structural_equal(a, b) -> None:
    """Raise :class:`StructuralMismatchError` showing where ``a`` and ``b`` first differ."""
    try:
        _Equal().eq(a, b)
    except _Mismatch as m:
        where = "".join(m.path) or "<top>"
        raise StructuralMismatchError(
            f"programs differ at {where}: {m.why}\n"
            f"  left:  {_show(m.a)}\n  right: {_show(m.b)}") from None


def _show(x) -> str:
    if isinstance(x, Buffer):
        return f"buffer {x.name}"
    text = str(x)
    lines = text.splitlines()
    if len(lines) > 12:
        text = "\n".join(lines[:12] + ["  ..."])
    return text.replace("\n", "\n         ")


def structural_hash(x) -> int:
    """A hash that agrees with :func:`structural_equal` (equal programs hash equal), and the
    same in every process (Python's ``hash`` of strings is salted per process, and tuning
    records written by one process are keyed by this hash and read by another).

        >>> structural_hash(func) == structural_hash(copy_of_func)
        True"""
    ids: dict[int, int] = {}
    keep = []
    items: list = []

    def walk(v):
        if isinstance(v, (Var, Buffer)):
            if id(v) not in ids:
                ids[id(v)] = len(ids)
                keep.append(v)
                items.append(("def", type(v).__name__, v.dtype, getattr(v, "shape", None),
                              getattr(v, "scope", None)))
            items.append(("ref", ids[id(v)]))
        elif isinstance(v, Const):
            items.append(("c", v.dtype, repr(v.value)))
        elif isinstance(v, IRModule):
            for name in sorted(v.functions):
                items.append(("fn", name))
                walk(v.functions[name])
        elif isinstance(v, tuple):
            items.append(("(", len(v)))
            for y in v:
                walk(y)
        elif is_node(v) or _is_dataclass_node(v):
            items.append(type(v).__name__)
            for f in fields(v):
                if f.init and not (isinstance(v, PrimFunc) and f.name == "name"):
                    walk(getattr(v, f.name))
        else:
            items.append(repr(v))

    walk(x)
    digest = hashlib.blake2b(repr(items).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)
