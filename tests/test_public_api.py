"""The user-facing surface of ``mlcbook`` and the error codes behind it."""

import importlib
import re
import subprocess
import sys

import pytest

import mlcbook as mb
from mlcbook.errors import MLCError, all_error_classes

SUBPACKAGES = ["tir", "te", "script", "schedule", "codegen", "runtime", "graph", "ops",
               "frontend", "grading", "models", "tune"]


@pytest.mark.parametrize("name", mb.__all__)
def test_every_public_name_resolves(name):
    assert getattr(mb, name) is not None


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mb.nope


def test_import_is_light():
    code = "import sys, mlcbook; print(sorted(m for m in ('llvmlite', 'onnx', 'nbclient') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_error_codes_are_unique_and_well_formed():
    for pkg in SUBPACKAGES:
        importlib.import_module(f"mlcbook.{pkg}")
    classes = all_error_classes()
    assert len(classes) > 40
    codes = {}
    for cls in classes:
        assert re.fullmatch(r"MLC-[A-Z]\d{3}", cls.code), cls
        assert cls.code not in codes, f"{cls.__name__} and {codes.get(cls.code)} share {cls.code}"
        codes[cls.code] = cls.__name__


def test_message_carries_the_code():
    err = mb.errors.ShapeError("buffer 'A' has shape (0,)")
    assert isinstance(err, MLCError)
    assert str(err) == "[MLC-T006] buffer 'A' has shape (0,)"
