"""File-system confinement of the grading kernel (Linux Landlock): it may read only Python,
the mlcbook package, the system's libraries and its own folder, and write only that folder.

    >>> roots = Confinement.for_kernel(Path("/tmp/mlcbook-grade-x/work"))
    >>> roots.apply()          # in the kernel's process, before it runs any notebook code

Landlock is an unprivileged Linux security module (kernel 5.13 and later): a process limits
its own access, and the limit holds for it and everything it starts, across ``exec``. The
repository that holds ``exercises/solutions/`` is not among the readable places, so a graded
notebook cannot open the solutions by any path. Where Landlock is missing, :func:`available`
says so and ``mlcbook grade --isolate`` refuses to run rather than grade without it.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass
from pathlib import Path

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446   # the same on x86-64 and arm64
_VERSION_FLAG = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_ALL = (1 << 13) - 1           # execute ... make_sym: every right of Landlock ABI 1
_REFER, _TRUNCATE = 1 << 13, 1 << 14
_READ = _EXECUTE | _READ_FILE | _READ_DIR
#: system folders a Python kernel reads (libraries, locales, certificates, /proc, devices)
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys",
               "/run", "/dev")
#: system places it writes: /dev/null and /dev/shm (semaphores of multiprocessing)
SYSTEM_WRITE = ("/dev",)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The Landlock ABI this kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _VERSION_FLAG)
    return max(int(version), 0)


def available() -> bool:
    return abi_version() >= 1


@dataclass(frozen=True)
class Confinement:
    """Folders (and everything below them) the process may read, and those it may write."""

    read: tuple[str, ...]
    write: tuple[str, ...]

    @staticmethod
    def for_kernel(workdir: Path, extra_read: tuple[str, ...] = ()) -> "Confinement":
        """What a Python kernel that grades a notebook in ``workdir`` needs: Python and its
        packages, the mlcbook package (not the repository around it), Jupyter's runtime
        folder (the connection file), the system folders, and ``workdir``."""
        from jupyter_core.paths import jupyter_runtime_dir
        package = Path(__file__).resolve().parents[1]        # .../mlcbook
        read = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.realpath(sys.executable),
                str(package), jupyter_runtime_dir(), *SYSTEM_READ, *extra_read}
        read |= {os.path.realpath(p) for p in list(read)}
        return Confinement(tuple(sorted(read)), (str(workdir), *SYSTEM_WRITE))

    def apply(self) -> None:
        """Confine the calling process (and its children) for good; OSError if it cannot."""
        libc = _libc()
        abi = abi_version()
        if abi < 1:
            raise OSError("Landlock is not available on this system")
        handled = _ABI1_ALL | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
        attr = _RulesetAttr(handled)
        ruleset = libc.syscall(_CREATE_RULESET, ctypes.byref(attr),
                               ctypes.c_size_t(ctypes.sizeof(attr)), 0)
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
        try:
            for paths, rights in ((self.read, _READ), (self.write, handled)):
                for path in paths:
                    self._allow(libc, ruleset, path, rights, handled)
            if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
            if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
        finally:
            os.close(ruleset)

    @staticmethod
    def _allow(libc, ruleset: int, path: str, rights: int, handled: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # a folder this system does not have
        try:
            if not os.path.isdir(path):   # a file: only the rights that apply to files
                rights &= _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE
            rule = _PathBeneath(rights & handled, fd)
            if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        finally:
            os.close(fd)
