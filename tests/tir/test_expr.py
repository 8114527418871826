import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import DTypeMismatchError, ShapeError
from mlcbook.tir import Binary, Buffer, Call, Const, Select, Var


def test_python_operators_build_typed_ir():
    i = Var("i")
    e = i * 4 + 1
    assert isinstance(e, Binary) and e.op == "+" and e.dtype == "int32"
    assert isinstance(e.b, Const) and e.b.value == 1


def test_python_number_takes_the_dtype_of_its_partner():
    x = Var("x", "float32")
    e = 2.0 * x
    assert e.a.dtype == "float32"
    y = Var("y", "int64")
    assert (y + 1).b.dtype == "int64"


def test_comparison_gives_bool_and_logic_combines():
    i, j = Var("i"), Var("j")
    c = (i < j) & (i >= 0)
    assert c.dtype == "bool" and c.op == "and"
    assert (~c).dtype == "bool"


def test_eq_builds_expression_but_identity_truth():
    i, j = Var("i"), Var("j")
    e = i == j
    assert isinstance(e, Binary) and e.op == "=="
    assert bool(i == i) and not bool(i == j)
    assert {i: 1}[i] == 1  # nodes work as dict keys


def test_truth_value_of_other_expressions_is_an_error():
    with pytest.raises(TypeError, match="select"):
        bool(Var("i") < 3)


def test_constructors_under_plain_names():
    x = Var("x", "float32")
    assert mb.tir.const(0.0, "float32").dtype == "float32"
    assert mb.tir.max(x, 0.0).op == "max"
    assert isinstance(mb.tir.exp(x), Call) and mb.tir.exp(x).dtype == "float32"
    assert isinstance(mb.tir.select(x > 0.0, x, 0.0), Select)
    assert mb.tir.if_then_else is mb.tir.select
    assert mb.tir.cast("float32", Var("i")).dtype == "float32"
    assert mb.tir.pow(x, 2.0).args[1].dtype == "float32"


def test_cast_to_own_dtype_is_identity():
    i = Var("i")
    assert mb.tir.cast("int32", i) is i


def test_dtype_mismatch_names_both_operands():
    with pytest.raises(DTypeMismatchError, match=r"MLC-T004.*x is float32 but i is int32.*cast"):
        Var("x", "float32") + Var("i")


def test_int_true_division_suggests_floor_division():
    with pytest.raises(DTypeMismatchError, match="use //"):
        Var("i") / 2


def test_float_floor_division_is_refused():
    with pytest.raises(DTypeMismatchError, match="floor division"):
        Var("x", "float32") // 2.0


def test_math_on_int_suggests_cast():
    with pytest.raises(DTypeMismatchError, match="needs a float argument.*cast"):
        mb.tir.exp(Var("i"))


def test_unknown_dtype():
    with pytest.raises(DTypeMismatchError, match="unknown dtype 'float128'"):
        Var("x", "float128")


def test_numpy_dtypes_accepted():
    assert Buffer("A", (2,), np.float32).dtype == "float32"
    assert Buffer("A", (2,), np.dtype("int64")).dtype == "int64"


def test_buffer_indexing_checks_rank_and_index_type():
    A = Buffer("A", (4, 4))
    with pytest.raises(ShapeError, match="'A' has 2 dimension.*indexed with 1"):
        A[Var("i")]
    with pytest.raises(DTypeMismatchError, match="indices must be integers"):
        A[Var("i"), Var("x", "float32")]


def test_buffer_shape_must_be_static_positive():
    with pytest.raises(ShapeError, match="positive int"):
        Buffer("A", (4, 0))


def test_non_integer_int_constant_refused():
    with pytest.raises(DTypeMismatchError, match="not an integer"):
        Const(1.5, "int32")


def test_infinities():
    assert mb.tir.neg_infinity("float32").value == -math.inf
    assert mb.tir.infinity("int32").value == 2**31 - 1


@pytest.mark.parametrize("value,dtype", [(2**31, "int32"), (-2**31 - 1, "int32"), (256, "uint8"),
                                         (-1, "uint8"), (2**63, "int64")])
def test_integer_constants_must_fit_their_dtype(value, dtype):
    # compiled code would wrap the value and the interpreter would not: refuse it
    with pytest.raises(DTypeMismatchError, match=f"constant {value} does not fit {dtype}"):
        Const(value, dtype)


def test_a_bare_number_beyond_int32_is_an_int64():
    assert Const(2**31 - 1, "int32").value == 2**31 - 1
    assert mb.tir.as_expr(2**31).dtype == "int64"
    with pytest.raises(DTypeMismatchError, match="does not fit int32"):
        Var("i", "int32") // 2**31


def test_a_buffer_beyond_the_addressable_size_is_a_shape_error():
    with pytest.raises(ShapeError, match=r"more than the .* \(2\*\*48\)"):
        Buffer("A", (2**63,), "float32")


def test_reinterpret_needs_number_types_of_one_width():
    from mlcbook.errors import DTypeMismatchError
    from mlcbook.tir.expr import Reinterpret, reinterpret
    assert reinterpret("int32", Var("x", "float32")).dtype == "int32"
    with pytest.raises(DTypeMismatchError, match="cannot reinterpret float32 .* as int64: both "
                       "must be number types of the same width"):
        Reinterpret("int64", Var("x", "float32"))
    with pytest.raises(DTypeMismatchError, match="bool has no bit pattern"):
        Reinterpret("uint8", Var("b", "bool"))


def test_bitwise_functions_take_integers_only():
    from mlcbook.errors import DTypeMismatchError
    from mlcbook.tir.expr import bitwise_and
    assert bitwise_and(Var("i"), 6).dtype == "int32"
    with pytest.raises(DTypeMismatchError, match="bitwise_and needs integer arguments, got "
                       "float32"):
        bitwise_and(Var("x", "float32"), Var("y", "float32"))
