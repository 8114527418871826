"""Every operator's PrimFunc prints as script that parses back to the same program."""

import pytest

from mlcbook import te
from mlcbook.script import parse
from mlcbook.te import ops
from mlcbook.tir import assert_structural_equal


def _x(*shape, name="x", dtype="float32"):
    return te.placeholder(shape, dtype, name=name)


def _binary(op):
    def build():
        a, b = _x(4, 1, 3, name="a"), _x(5, 1, name="b")
        return [a, b, getattr(ops, op)(a, b)]
    return build


def _unary(op):
    def build():
        x = _x(3, 5)
        return [x, getattr(ops, op)(x)]
    return build


def _with(fn, *shapes, **kwargs):
    def build():
        ins = [_x(*s, name=f"in{n}") for n, s in enumerate(shapes)]
        return ins + [fn(*ins, **kwargs)]
    return build


BUILDERS = {
    **{f"unary_{op}": _unary(op) for op in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                                             "erf", "neg", "abs", "floor", "ceil", "relu")},
    **{f"binary_{op}": _binary(op) for op in ("add", "sub", "mul", "div",
                                               "maximum", "minimum", "pow")},
    "scalar_operand": _with(lambda x: ops.sub(1.5, x), (3, 4)),
    "cast": _with(lambda x: ops.cast(x, "int32"), (3, 4)),
    "clip": _with(lambda x: ops.clip(x, -1.0, 1.0), (3, 4)),
    "bias_add": _with(ops.bias_add, (2, 3, 4, 5), (3,)),
    "matmul": _with(ops.matmul, (5, 7), (7, 3)),
    "matmul_tt": _with(ops.matmul, (7, 5), (3, 7), transpose_a=True, transpose_b=True),
    "matmul_vec": _with(ops.matmul, (7,), (2, 7, 3)),
    "batch_matmul": _with(ops.batch_matmul, (1, 4, 5), (3, 5, 2)),
    "conv2d": _with(ops.conv2d, (1, 4, 7, 9), (6, 2, 3, 2), stride=(2, 1), padding=(1, 2),
                    dilation=2, groups=2),
    "max_pool2d": _with(ops.max_pool2d, (1, 2, 8, 7), pool_size=(3, 2), stride=(1, 2),
                        padding=(1, 0, 2, 1)),
    "avg_pool2d": _with(ops.avg_pool2d, (1, 1, 9, 9), pool_size=3, stride=2, padding=2,
                        dilation=2),
    "avg_pool2d_include_pad": _with(ops.avg_pool2d, (1, 2, 7, 7), pool_size=3, padding=1,
                                    count_include_pad=True),
    "softmax": _with(ops.softmax, (2, 3, 4), axis=1),
    "layer_norm": _with(ops.layer_norm, (2, 3, 5), (3, 5), (3, 5), axis=-2),
    "transpose": _with(ops.transpose, (2, 3, 4), axes=(1, 2, 0)),
    "reshape": _with(ops.reshape, (2, 3, 5), newshape=(5, -1)),
    "pad": _with(ops.pad, (3, 5), pad_width=((1, 2), (0, 3)), value=-1.0),
    "reduce_sum_all": _with(ops.sum, (3, 5)),
    "mean": _with(ops.mean, (3, 5, 2), axis=(0, 2), keepdims=True),
    "max": _with(ops.max, (3, 5), axis=1),
    "min": _with(ops.min, (3, 5), axis=0),
}


@pytest.mark.parametrize("case", sorted(BUILDERS))
def test_operator_round_trips_through_script(case):
    func = te.create_prim_func(BUILDERS[case]())
    text = str(func)
    again = parse(text)
    assert_structural_equal(again, func)
    assert str(again) == text
