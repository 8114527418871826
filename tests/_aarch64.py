"""Running aarch64 code in the suite: Debian's cross compiler links it statically and
qemu-aarch64 runs it (`.ci/run` installs both; elsewhere the tests that need them are
skipped, saying how to get them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

CC, QEMU = "aarch64-linux-gnu-gcc", "qemu-aarch64"
needs_qemu = pytest.mark.skipif(
    shutil.which(CC) is None or shutil.which(QEMU) is None,
    reason="needs Debian's aarch64 cross compiler and qemu-user: apt-get install "
           "gcc-aarch64-linux-gnu qemu-user (.ci/run does)")


def link(program, sources, include=None) -> None:
    """Link ``sources`` (C files, objects, archives) statically into ``program``."""
    flags = ["-I", str(include)] if include is not None else []
    subprocess.run([CC, "-static", "-O2", "-Wall", "-Werror", *flags, *map(str, sources),
                    "-lm", "-lpthread", "-o", str(program)], check=True, capture_output=True,
                   text=True)


def run(program, *args) -> str:
    """Run ``program`` under qemu-aarch64; its standard output (it must exit 0)."""
    proc = subprocess.run([QEMU, str(program), *map(str, args)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
