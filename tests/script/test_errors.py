"""Parse errors: a ScriptError naming the problem, at the line and column of the real source."""

import textwrap

import pytest

from mlcbook.errors import ReadOnlyStoreError, ScriptError, UndefinedVariableError
from mlcbook.script import T, parse

HEAD = '@T.prim_func\ndef f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):\n'


def _parse_body(body: str):
    """Parse a function whose body is ``body``; line 3 of the text is the body's first line."""
    return parse(HEAD + textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))


def _error(body: str) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        _parse_body(body)
    return info.value


def test_unknown_t_name_in_a_decorated_function_points_into_this_file():
    with pytest.raises(ScriptError) as info:
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in T.gird(4):
                A[i] = T.float32(0)
    err = info.value
    line = open(__file__).read().splitlines()[err.lineno - 1]
    assert line[err.col:].startswith("T.gird(4)")
    assert "unknown name T.gird; did you mean T.grid?" in str(err)
    assert __file__ in str(err) and "[MLC-P001]" in str(err)
    assert str(err).endswith(line + "\n    " + " " * err.col + "^")


def test_unknown_t_name_without_close_match_lists_known_names():
    err = _error("T.frobnicate(1)")
    assert "unknown name T.frobnicate; known names: T.prim_func" in str(err)


def test_error_in_text_reports_line_column_and_caret():
    err = _error("""
        for i in range(4):
            B[i] = A[i] + k
    """)
    assert (err.lineno, err.col) == (4, 22)
    assert "unknown name 'k'" in str(err)
    assert str(err).endswith("    B[i] = A[i] + k\n" + " " * 26 + "^")


def test_unknown_variable_suggests_a_visible_name():
    err = _error("""
        for idx in range(4):
            B[idx] = A[idy]
    """)
    assert "did you mean idx?" in str(err)


def test_python_syntax_error_is_a_script_error():
    with pytest.raises(ScriptError) as info:
        parse(HEAD + "    for i in range(4)\n        A[i] = 0\n")
    assert info.value.lineno == 3 and "invalid Python syntax" in str(info.value)


def test_dtype_mismatch_points_at_the_expression():
    err = _error("B[0] = A[0] + T.float64(1)")
    assert "operands of '+' have different dtypes" in str(err)
    assert (err.lineno, err.col) == (3, 11)


@pytest.mark.parametrize("body, message", [
    ("T.reads(A[0])", "T.reads(...) belongs directly inside a `with T.block(...):`"),
    ("X = T.alloc_buffer((4,), \"float32\")\nfor i in range(4):\n    Y = T.alloc_buffer((4,))",
     "T.alloc_buffer belongs directly inside a block"),
    ("with T.init():\n    B[0] = T.float32(0)", "`with T.init():` appears once"),
    ("B[0] = T.float32(A[0])", "to convert an expression use T.Cast(\"float32\", x)"),
    ("T.evaluate(1 < 2 < 3)", "chained comparisons"),
    ("x = A[0]", "it has no local variables"),
    ("for i in range(1, 4):\n    B[i] = A[i]", "loops start at 0"),
    ("for i in A:\n    B[0] = A[0]", "a loop runs over range(n), T.grid(...)"),
    ("for i, j in T.grid(4):\n    B[i] = A[i]", "the loop defines 1 variable(s)"),
    ("B[0] = A", "buffer 'A' is used as a value"),
    ("B[0:2] = A[0]", "a slice selects a region"),
    ("A[0]", "this expression statement does nothing"),
    ("B[0] = A[0] if True else A[1]", "use T.select(cond, a, b)"),
    ("with T.block(\"b\"):\n    T.writes(B[0])\n    T.writes(B[1])",
     "T.writes is given twice in block 'b'"),
    ("for i in range(4):\n    with T.block(\"b\"):\n        v = T.axis.remap(\"S\", [i + 1])",
     "T.axis.remap binds loop variables of enclosing loops"),
    ("with T.block(\"b\"):\n    v = T.axis.spatial(4)", "T.axis.spatial needs the argument(s) binding"),
    ("for i in T.parallel(4, step=2):\n    B[i] = A[i]", "T.parallel has no argument 'step'"),
    ("T.func_attr({1: 2})", "T.func_attr takes a dict with string keys"),
])
def test_misuse_is_named(body, message):
    assert message in str(_error(body))


def test_parameter_needs_a_buffer_annotation():
    with pytest.raises(ScriptError, match="parameter 'A' needs a buffer annotation"):
        parse("@T.prim_func\ndef f(A):\n    T.evaluate(0)\n")


def test_text_function_needs_the_decorator():
    with pytest.raises(ScriptError, match="needs the @T.prim_func decorator"):
        parse("def f(A: T.Buffer((4,), \"float32\")):\n    T.evaluate(0)\n")


def test_unknown_decorator_name_is_suggested():
    with pytest.raises(ScriptError, match="did you mean T.prim_func"):
        parse("@T.prim_fun\ndef f(A: T.Buffer((4,), \"float32\")):\n    T.evaluate(0)\n")


def test_module_class_needs_its_decorator():
    with pytest.raises(ScriptError, match="must be decorated with @T.ir_module"):
        parse("class M:\n    pass\n")


def test_non_constant_global_is_refused():
    shapes = [4]

    with pytest.raises(ScriptError, match="'shapes' is a list; a script can use only int"):
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(shapes)


def test_verifier_errors_come_through_with_their_own_class():
    with pytest.raises(ReadOnlyStoreError):
        _parse_body("A[0] = T.float32(1)")
    with pytest.raises(UndefinedVariableError, match="cannot see it"):
        _parse_body("""
            for i in range(4):
                with T.block("b"):
                    B[i] = A[i]
        """)


def test_source_must_be_readable():
    namespace = {"T": T}
    code = "def f(A: T.Buffer((4,), 'float32')):\n    T.evaluate(0)\n"
    exec(compile(code, "<generated>", "exec"), namespace)
    with pytest.raises(ScriptError, match="cannot read the source of 'f'"):
        T.prim_func(namespace["f"])


@pytest.mark.parametrize("call", [lambda: T.grid(4), lambda: T.axis.spatial(4, 0),
                                  lambda: T.block("b"), lambda: T.reads()])
def test_markers_explain_themselves_outside_a_script(call):
    with pytest.raises(ScriptError, match="only has a meaning inside a function decorated "
                                          "with @T.prim_func"):
        call()


def test_ir_module_refuses_members_that_are_not_prim_funcs():
    with pytest.raises(ScriptError, match="M.helper in an @T.ir_module class is not a "
                                          "@T.prim_func"):
        @T.ir_module
        class M:
            @T.prim_func
            def main(A: T.Buffer((4,), "float32")):
                T.evaluate(0)

            def helper(self):
                return 1


def _sum_of(terms: int, op: str = "+") -> str:
    return f" {op} ".join(f"A[{k % 4}]" for k in range(terms))


@pytest.mark.parametrize("terms,op", [(500, "+"), (2000, "+"), (600, "*")])
def test_an_expression_nested_too_deep_is_refused_not_a_recursion_error(terms, op):
    err = _error(f"with T.block('B'):\n    B[0] = {_sum_of(terms, op)}")
    assert "nests more than 256 operations deep" in err.message
    assert "Instead: split it into partial sums" in err.message
    assert err.lineno == 4


def test_a_long_sum_under_the_limit_parses_and_means_the_sum():
    import numpy as np
    import mlcbook as mb
    func = _parse_body(f"with T.block('B'):\n    B[0] = {_sum_of(200)}")
    a, b = np.array([1, 2, 3, 4], "float32"), np.zeros(4, "float32")
    mb.tir.evaluate(func, a, b)
    assert b[0] == 50 * a.sum()
