"""Checks of the paths a user asks mlcbook to write, made before any work is done.

    >>> output_file("/no/such/folder/m.mlcb", "the artifact", ArtifactError)
    Traceback (most recent call last):
    mlcbook.errors.ArtifactError: [MLC-C007] cannot write the artifact to '/no/such/...

A path that names a folder where a file is wanted, a file where a folder is wanted, or a
folder that does not exist raises the given :class:`~mlcbook.errors.MLCError` subclass,
never a raw ``OSError``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import MLCError


#: the longest file or folder name most file systems take (bytes, as the OS counts them)
NAME_MAX = 255


def _as_path(path, what: str, error: type[MLCError]) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not isinstance(os.fspath(path), str) \
            or not os.fspath(path):
        raise error(f"{what} needs a path (a str or pathlib.Path), got {path!r}; Instead: "
                    "pass a file name such as 'out/model.mlcb'")
    text = os.fspath(path)
    if "\0" in text:
        raise error(f"the path {text!r} for {what} holds a NUL character, which no file name "
                    "can; Instead: remove it")
    # the OS refuses a longer name with ENAMETOOLONG from every call, even exists()
    for part in Path(text).parts:
        if len(os.fsencode(part)) > NAME_MAX:
            raise error(f"the path for {what} has a name of {len(os.fsencode(part))} bytes "
                        f"({part[:40]!r}...), longer than the {NAME_MAX} a file system takes; "
                        "Instead: choose a shorter name")
    return Path(text)


def _file_above(path: Path) -> Path | None:
    """The first ancestor of ``path`` that exists and is not a folder, if any."""
    for parent in reversed(path.absolute().parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return None


def output_file(path, what: str, error: type[MLCError]) -> Path:
    """``path`` as a Path, checked to be writable as a file: its folder exists, and it is
    not itself a folder. ``what`` names the file in the message (``"the artifact"``)."""
    p = _as_path(path, what, error)
    if p.is_dir():
        raise error(f"cannot write {what} to {str(path)!r}: it is a folder; Instead: give a "
                    f"file name inside it, such as {str(p / 'model.mlcb')!r}")
    blocker = _file_above(p)
    if blocker is not None:
        raise error(f"cannot write {what} to {str(path)!r}: {str(blocker)!r} is a file, not a "
                    "folder; Instead: choose a path whose folders are folders")
    if not p.absolute().parent.is_dir():
        raise error(f"cannot write {what} to {str(path)!r}: the folder "
                    f"{str(p.absolute().parent)!r} does not exist; Instead: check that its "
                    "folder exists (create it with os.makedirs) or choose another")
    return p


def output_folder(path, what: str, error: type[MLCError], create: bool = True) -> Path:
    """``path`` as a Path, checked to be usable as a folder to write into: it is a folder or
    does not exist yet (it is then created, with its parents, unless ``create`` is false),
    and no part of it is a file."""
    p = _as_path(path, what, error)
    if p.exists() and not p.is_dir():
        raise error(f"cannot write {what} into {str(path)!r}: it is a file, not a folder; "
                    "Instead: give a folder (it is created if missing)")
    blocker = _file_above(p)
    if blocker is not None:
        raise error(f"cannot write {what} into {str(path)!r}: {str(blocker)!r} is a file, not "
                    "a folder; Instead: choose a path whose folders are folders")
    if not create:
        return p
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise error(f"cannot create the folder {str(path)!r} for {what}: {e.strerror or e}; "
                    "Instead: choose a folder you can write") from None
    return p
