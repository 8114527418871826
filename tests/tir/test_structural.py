import pytest

from mlcbook.errors import StructuralMismatchError
from mlcbook.tir import (Buffer, BufferStore, For, IRModule, Var, assert_structural_equal,
                         structural_equal, structural_hash)

from ._programs import matmul


def test_equal_up_to_renaming():
    a, b = matmul(), matmul()
    assert a is not b
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_the_hash_is_the_same_in_every_process():
    # tuning records are keyed by it: `mlcbook tune` writes them, another process reads them
    import os
    import subprocess
    import sys
    code = ("import sys; sys.path.insert(0, 'tests'); from tir._programs import matmul; "
            "from mlcbook.tir import structural_hash; print(structural_hash(matmul()))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, env={**os.environ, "PYTHONHASHSEED": "12345"}, check=True)
    assert int(out.stdout) == structural_hash(matmul())


def test_different_shapes_differ():
    assert not structural_equal(matmul(16, 16, 16), matmul(16, 16, 8))


def test_block_names_matter():
    assert not structural_equal(matmul(name="C"), matmul(name="D"))


def test_renaming_must_be_consistent():
    A = Buffer("A", (4,))
    i, j = Var("i"), Var("j")
    f1 = For(i, 4, For(j, 4, BufferStore(A, 0.0, (i,))))
    f2 = For(i, 4, For(j, 4, BufferStore(A, 0.0, (j,))))
    assert not structural_equal(f1, f2)


def test_modules_compare_by_function_name():
    f = matmul()
    assert structural_equal(IRModule({"mm": f}), IRModule({"mm": matmul()}))
    assert not structural_equal(IRModule({"mm": f}), IRModule({"other": matmul()}))


def test_assert_reports_where_programs_differ():
    with pytest.raises(StructuralMismatchError, match=r"MLC-T008.*params\[0\].*A\[16, 16\].*A\[16, 8\]"):
        assert_structural_equal(matmul(16, 16, 16), matmul(16, 16, 8))
