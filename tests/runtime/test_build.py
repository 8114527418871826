"""The build cache and errors of mb.build."""

from __future__ import annotations

import pytest

import mlcbook as mb
from mlcbook.errors import BuildError
from mlcbook.runtime import cache_info

from ._programs import ADD


def test_rebuilding_an_identical_program_is_a_cache_hit():
    k1 = mb.build(mb.script.parse(ADD))
    before = cache_info()["hits"]
    again = mb.script.parse(str(mb.script.parse(ADD)))   # a new, structurally equal object
    k2 = mb.build(again)
    assert k2 is k1
    assert cache_info()["hits"] == before + 1


def test_different_options_or_programs_are_different_kernels():
    f = mb.script.parse(ADD)
    k = mb.build(f)
    assert mb.build(f, fastmath=True) is not k
    assert mb.build(mb.script.parse(ADD.replace("+ B[vj]", "- B[vj]"))) is not k


def test_build_rejects_what_it_cannot_compile():
    with pytest.raises(BuildError, match="PrimFunc or an IRModule, got str"):
        mb.build("not a program")
    with pytest.raises(BuildError, match="no PrimFunc"):
        mb.build(mb.tir.IRModule({}))
