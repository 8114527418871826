"""T.tensor_call in the script: an intrinsic's impl parses back from its printed text."""

import pytest

import mlcbook as mb
from mlcbook.errors import ScriptError
from mlcbook.tir import TensorCall, TensorIntrin

IMPL = '''
@T.prim_func(root=False)
def dot_impl(A: T.Buffer((4,), "uint8"), B: T.Buffer((8, 4), "int8"), C: T.Buffer((8,), "int32")):
    T.evaluate(T.tensor_call("x86.dot_u8i8.8x4", A[0], B[0, 0], C[0]))
'''


def test_tensor_call_parses_to_the_op_and_its_tiles():
    call = mb.script.parse(IMPL).body.value
    assert isinstance(call, TensorCall) and call.op == "x86.dot_u8i8.8x4"
    assert [a.buffer.name for a in call.args] == ["A", "B", "C"]


def test_a_builtin_impl_roundtrips_through_its_text():
    impl = TensorIntrin.get("x86.avx2.dot_u8i8_8x4").impl
    assert mb.script.parse(impl.script()).script() == impl.script()


@pytest.mark.parametrize("call, message", [
    ('T.tensor_call(A[0], C[0])', "the op's name, a string"),
    ('T.tensor_call("x86.dot_u8i8.8x4", A[0], 1, C[0])', "a buffer load at the tile's origin"),
    ('T.tensor_call(op="x86.dot_u8i8.8x4")', "all positional"),
])
def test_a_malformed_tensor_call_says_what_it_takes(call, message):
    with pytest.raises(ScriptError, match=message):
        mb.script.parse(IMPL.replace('T.tensor_call("x86.dot_u8i8.8x4", A[0], B[0, 0], C[0])',
                                     call))
