"""Graph value dtypes: the loop IR's table, bfloat16 counted as a float."""
import numpy as np
import pytest

from mlcbook.errors import OpDTypeError
from mlcbook.ops.types import GRAPH_DTYPES, check_graph_dtype, is_float_dtype


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64", "bfloat16"])
def test_new_dtypes_are_graph_dtypes_by_name_and_numpy_dtype(dtype):
    assert check_graph_dtype(dtype) == dtype
    assert check_graph_dtype(np.dtype(dtype)) == dtype


def test_unsupported_dtype_error_lists_the_table():
    with pytest.raises(OpDTypeError, match="complex64.* is not supported by mlcbook graphs; use "
                       "one of int8, uint8, int16, uint16, int32, uint32, int64, uint64, "
                       "float16, bfloat16, float32, float64, bool"):
        check_graph_dtype("complex64")


def test_bfloat16_is_a_float_though_numpy_files_it_under_kind_v():
    assert np.dtype("bfloat16").kind == "V"
    assert is_float_dtype("bfloat16") and is_float_dtype(np.float16)
    assert not any(is_float_dtype(d) for d in GRAPH_DTYPES if "int" in d or d == "bool")
