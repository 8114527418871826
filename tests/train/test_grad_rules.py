"""Every gradient rule against central finite differences, in float64, on random shapes and
inputs (hypothesis draws the shapes, the seed and the attributes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlcbook as mb
from mlcbook.graph import Constant, Function, TupleGetItem, Var, op
from mlcbook.ops.types import TensorType
from mlcbook.train import has_gradient
from mlcbook.train.gradcheck import max_gradient_error

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
dims = st.integers(1, 4)


def check(build, arrays: dict, wrt=None, seed=0, tol=1e-5, eps=1e-6):
    """loss = sum(build(*vars) * R) for a random R; its gradients vs finite differences."""
    xs = [Var(n, TensorType(a.shape, a.dtype.name)) for n, a in arrays.items()]
    y = build(*xs)
    r = np.random.default_rng(seed + 1).standard_normal(y.shape)
    loss = op.sum(op.mul(y, Constant(r)), keepdims=0)
    f = Function(xs, loss)
    wrt = wrt or [n for n, a in arrays.items() if a.dtype.kind == "f"]
    assert max_gradient_error(f, arrays, wrt, eps) < tol


def rand(rng, shape, low=None, away=0.0, high=None):
    x = rng.standard_normal(shape)
    if low is not None:
        x = rng.uniform(low, low + 2 if high is None else high, shape)
    if away:
        x = np.where(np.abs(x) < away, np.sign(x + 1e-12) * away + x, x)
    return x


UNARY = {"neg": {}, "abs": {"away": 0.1}, "exp": {}, "log": {"low": 0.5}, "sqrt": {"low": 0.5},
         "reciprocal": {"low": 0.5}, "relu": {"away": 0.1}, "sigmoid": {}, "tanh": {},
         "erf": {}, "leaky_relu": {"away": 0.1}, "gelu": {}, "sin": {}, "cos": {},
         "tan": {"low": -1, "high": 1}, "asin": {"low": -0.9, "high": 0.9},
         "acos": {"low": -0.9, "high": 0.9}, "atan": {}, "sinh": {}, "cosh": {}, "asinh": {},
         "acosh": {"low": 1.2, "high": 3}, "atanh": {"low": -0.9, "high": 0.9},
         "softplus": {}, "mish": {}, "swish": {}, "hard_swish": {"away": 0.1},
         "elu": {"away": 0.1}, "selu": {"away": 0.1}, "celu": {"away": 0.1},
         "thresholded_relu": {"away": 0.1}, "hard_sigmoid": {}, "softsign": {"away": 0.1},
         "shrink": {"away": 0.1}}


@pytest.mark.parametrize("name", sorted(UNARY))
@SETTINGS
@given(shape=st.lists(dims, min_size=0, max_size=3), seed=st.integers(0, 99))
def test_unary(name, shape, seed):
    rng = np.random.default_rng(seed)
    check(lambda x: getattr(op, name)(x), {"x": rand(rng, shape, **UNARY[name])}, seed=seed)


def test_gelu_tanh_and_clip():
    rng = np.random.default_rng(0)
    check(lambda x: op.gelu(x, approximate="tanh"), {"x": rng.standard_normal((3, 4))})
    x = rng.uniform(-2, 2, (5, 6))
    x = np.where(np.abs(np.abs(x) - 1) < 0.05, 0.5, x)
    check(lambda x: op.clip(x, min=-1.0, max=1.0), {"x": x})
    check(lambda x: op.clip(x, max=1.0), {"x": x})


def test_cast_between_floats():
    x = np.random.default_rng(0).standard_normal((2, 3))
    check(lambda x: op.cast(op.mul(op.cast(x, dtype="float32"), op.cast(x, dtype="float32")),
                            dtype="float64"), {"x": x}, tol=1e-3, eps=1e-2)


@st.composite
def broadcast_pair(draw):
    shape = draw(st.lists(dims, min_size=1, max_size=3))
    other = [d if draw(st.booleans()) else 1 for d in shape]
    other = other[draw(st.integers(0, len(other))):]
    return (shape, other) if draw(st.booleans()) else (other, shape)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "maximum", "minimum", "pow"])
@SETTINGS
@given(shapes=broadcast_pair(), seed=st.integers(0, 99))
def test_binary(name, shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    if name in ("div", "pow"):
        a, b = rng.uniform(0.5, 2, shapes[0]), rng.uniform(0.5, 2, shapes[1])
    check(lambda x, y: getattr(op, name)(x, y), {"a": a, "b": b}, seed=seed)


@SETTINGS
@given(shapes=broadcast_pair(), seed=st.integers(0, 99))
def test_where(shapes, seed):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, shapes[0]), rand(rng, shapes[1])
    cond = Constant(rng.random(np.broadcast_shapes(shapes[0], shapes[1])) > 0.5)
    check(lambda x, y: op.where(cond, x, y), {"a": a, "b": b}, seed=seed)


@SETTINGS
@given(shape=st.lists(dims, min_size=2, max_size=3), seed=st.integers(0, 99), data=st.data())
def test_expand_tile_and_trilu(shape, seed, data):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    wide = [d if d > 1 else data.draw(st.integers(1, 3)) for d in shape]
    check(lambda v: op.expand(v, shape=(2, *wide)), {"x": x}, seed=seed)
    reps = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    check(lambda v: op.tile(v, repeats=reps), {"x": x}, seed=seed)
    k, upper = data.draw(st.integers(-1, 1)), data.draw(st.integers(0, 1))
    check(lambda v: op.trilu(v, upper=upper, k=k), {"x": x}, seed=seed)


@SETTINGS
@given(shape=st.lists(dims, min_size=1, max_size=3), seed=st.integers(0, 99))
def test_prelu_with_a_slope_that_broadcasts(shape, seed):
    rng = np.random.default_rng(seed)
    x, slope = rand(rng, shape, away=0.1), rng.standard_normal(shape[-1:])
    check(lambda v, s: op.prelu(v, s), {"x": x, "s": slope}, seed=seed)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
@SETTINGS
@given(shape=st.lists(dims, min_size=1, max_size=3), data=st.data())
def test_reduce(name, shape, data):
    axes = data.draw(st.none() | st.lists(st.integers(0, len(shape) - 1), min_size=1,
                                          unique=True).map(tuple))
    keep = data.draw(st.integers(0, 1))
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    check(lambda v: getattr(op, name)(v, axes=axes, keepdims=keep), {"x": x})


@SETTINGS
@given(m=dims, k=dims, n=dims, batch=st.sampled_from([(), (2,), (2, 1)]),
       vec=st.sampled_from(["", "a", "b"]))
def test_matmul(m, k, n, batch, vec):
    rng = np.random.default_rng(m * 16 + k * 4 + n)
    a = rng.standard_normal((k,) if vec == "a" else batch + (m, k))
    b = rng.standard_normal((k,) if vec == "b" else (k, n))
    check(lambda x, y: op.matmul(x, y), {"a": a, "b": b})


@SETTINGS
@given(m=dims, k=dims, n=dims, ta=st.integers(0, 1), tb=st.integers(0, 1),
       c_shape=st.sampled_from([None, "n", "mn", "1"]))
def test_gemm(m, k, n, ta, tb, c_shape):
    rng = np.random.default_rng(m + 5 * k + 25 * n)
    arrays = {"a": rng.standard_normal((k, m) if ta else (m, k)),
              "b": rng.standard_normal((n, k) if tb else (k, n))}
    if c_shape:
        arrays["c"] = rng.standard_normal({"n": (n,), "mn": (m, n), "1": (1,)}[c_shape])
    check(lambda *xs: op.gemm(*xs, trans_a=ta, trans_b=tb, alpha=0.5, beta=2.0), arrays)


@SETTINGS
@given(shape=st.lists(st.integers(2, 4), min_size=3, max_size=3), seed=st.integers(0, 99),
       perm=st.permutations([0, 1, 2]))
def test_data_movement(shape, seed, perm):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    a, b, c = shape
    check(lambda v: op.reshape(v, shape=(a * b, c)), {"x": x}, seed=seed)
    check(lambda v: op.flatten(v, axis=2), {"x": x}, seed=seed)
    check(lambda v: op.squeeze(op.unsqueeze(v, axes=(0,)), axes=(0,)), {"x": x}, seed=seed)
    check(lambda v: op.transpose(v, perm=tuple(perm)), {"x": x}, seed=seed)
    check(lambda v: op.concat(v, op.mul(v, v), axis=int(perm[0])), {"x": x}, seed=seed)
    check(lambda v: op.split(v, sizes=(1, c - 1), axis=2)[1], {"x": x}, seed=seed)
    pads = tuple(int(p) for p in rng.integers(-1, 3, 6))
    check(lambda v: op.pad(v, pads=pads), {"x": x}, seed=seed)
    idx = Constant(rng.integers(-b, b, (2, 3)))
    check(lambda v: op.gather(v, idx, axis=1), {"x": x}, seed=seed)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_and_scatter_elements(axis):
    rng = np.random.default_rng(axis + 5)
    x = rng.standard_normal((3, 4, 5))
    n = x.shape[axis]
    shape = list(x.shape)
    shape[axis] = 2
    idx = rng.integers(-n, n, shape)             # repeats: a read element gets both gradients
    check(lambda v: op.gather_elements(v, Constant(idx), axis=axis), {"x": x})
    # distinct indices per line along the axis: "none" writes each place once
    distinct = np.moveaxis(np.argsort(rng.random(np.moveaxis(x, axis, -1).shape), axis=-1)
                           [..., :2], -1, axis)
    u = rng.standard_normal(shape)
    for reduction, ix in (("none", distinct), ("add", idx)):
        check(lambda v, w: op.scatter_elements(v, Constant(ix), w, axis=axis,
                                               reduction=reduction), {"x": x, "u": u})


def test_gather_and_scatter_nd():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 3, 2))
    idx = np.array([[0, 1], [3, 2], [0, 1]])    # (0, 1) twice
    check(lambda v: op.gather_nd(v, Constant(idx)), {"x": x})
    u = rng.standard_normal((2, 2))
    check(lambda v, w: op.scatter_nd(v, Constant(idx[1:]), w), {"x": x, "u": u})
    check(lambda v, w: op.scatter_nd(v, Constant(idx[:2]), w, reduction="add"), {"x": x, "u": u})


def test_scatter_with_a_max_reduction_has_no_rule_and_says_so():
    x = Var("x", TensorType((4,), "float64"))
    u = Var("u", TensorType((2,), "float64"))
    f = Function([x, u], op.sum(op.scatter_elements(x, Constant(np.array([0, 2])), u,
                                                    reduction="max"), keepdims=0))
    with pytest.raises(mb.MLCError, match="reduction='max'.*Instead"):
        mb.train.grad(f, wrt=["x"])


@SETTINGS
@given(n=st.integers(2, 7), data=st.data())
def test_slice(n, data):
    step = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
    start = data.draw(st.integers(-n, n - 1))
    end = data.draw(st.integers(-n - 1, n))
    x = np.random.default_rng(n).standard_normal((3, n))
    check(lambda v: op.slice(v, starts=(start,), ends=(end,), axes=(1,), steps=(step,)),
          {"x": x})


@SETTINGS
@given(stride=st.integers(1, 2), dil=st.integers(1, 2), pad=st.integers(0, 2),
       group=st.sampled_from([1, 2]), size=st.integers(4, 6), bias=st.booleans())
def test_conv(stride, dil, pad, group, size, bias):
    rng = np.random.default_rng(stride * 100 + dil * 10 + pad + size)
    arrays = {"x": rng.standard_normal((2, 2, size, size + 1)),
              "w": rng.standard_normal((4, 2 // group, 2, 3))}
    if bias:
        arrays["b"] = rng.standard_normal((4,))
    check(lambda *xs: op.conv(*xs, strides=(stride, 1), dilations=(1, dil),
                              pads=(pad, 0, 0, pad), group=group), arrays)


@pytest.mark.parametrize("name", ["max_pool", "avg_pool"])
@SETTINGS
@given(k=st.integers(1, 3), stride=st.integers(1, 2), pad=st.integers(0, 1),
       ceil=st.integers(0, 1), include=st.integers(0, 1))
def test_pool(name, k, stride, pad, ceil, include):
    pad = min(pad, k - 1)
    x = np.random.default_rng(k * 7 + stride).permutation(2 * 30).reshape(1, 2, 5, 6) / 7.0
    attrs = dict(kernel_shape=(k, 2), strides=(stride, 2), pads=(pad, 0, pad, 1),
                 ceil_mode=ceil)
    if name == "avg_pool":
        attrs["count_include_pad"] = include
    check(lambda v: getattr(op, name)(v, **attrs), {"x": x})


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=3, max_size=4), seed=st.integers(0, 99),
       data=st.data())
def test_normalizations_and_softmax(shape, seed, data):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    check(lambda v: op.softmax(v, axis=axis), {"x": x}, seed=seed)
    check(lambda v: op.log_softmax(v, axis=axis), {"x": x}, seed=seed)
    check(lambda v: op.global_avg_pool(v), {"x": x}, seed=seed)
    ax = axis % len(shape)
    if any(d > 1 for d in shape[ax:]):      # layer norm of one element is constant
        tail = tuple(shape[ax:])
        check(lambda *xs: op.layer_norm(*xs, axis=axis),
              {"x": x, "s": rng.standard_normal(tail), "b": rng.standard_normal(tail[-1:])},
              seed=seed, tol=1e-4)
    c = shape[1]
    check(lambda *xs: op.batch_norm(*xs),
          {"x": x, "s": rng.standard_normal(c), "b": rng.standard_normal(c),
           "m": rng.standard_normal(c), "v": rng.uniform(0.5, 2, c)}, seed=seed)


#: ops whose results are booleans, indices or steps: no gradient to speak of
NOT_DIFFERENTIABLE = {"equal", "less", "greater", "greater_equal", "less_equal", "logical_and",
                      "logical_or", "logical_xor", "logical_not", "isnan", "isinf", "argmax",
                      "argmin", "sign", "floor", "ceil", "round", "mod", "bitshift",
                      "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitcast",
                      "max_pool_indices",
                      # integer arithmetic and rounding to integers: no useful derivative
                      "quantize_linear", "dequantize_linear", "matmul_integer", "conv_integer",
                      "qlinear_matmul", "qlinear_conv", "int8_dense", "int8_conv2d",
                      # bit-pattern conversions of the float8/float4/int4/int2 storage types
                      "lowbit_decode", "lowbit_encode"}
#: differentiable ops added for ONNX's operator set that have no rule yet: asking for a
#: gradient through them raises NoGradientError naming the op (see the test below). A new
#: op must get a rule or be listed here.
NO_RULE_YET: set[str] = {"deform_conv", "linear_attention", "roi_align"}


#: ops that only mb.compile's last graph passes insert (opt_level 3, on constant weights),
#: after any differentiation: no graph asks for their gradient
COMPILER_ONLY = {"winograd_input", "winograd_product", "winograd_output"}


def test_every_differentiable_op_has_a_rule():
    for name in mb.ops.list_ops():
        if name not in NOT_DIFFERENTIABLE | NO_RULE_YET | COMPILER_ONLY:
            assert has_gradient(name), name
    assert not {n for n in NO_RULE_YET if has_gradient(n)}, "listed as missing but has a rule"


def test_a_gradient_through_an_op_without_a_rule_names_it():
    x = Var("x", TensorType((1, 1, 3, 3), "float64"))
    grid = Constant(np.zeros((1, 2, 2, 2)))
    f = Function([x], op.sum(op.grid_sample(x, grid), keepdims=0))
    rule = mb.train.gradient_rule("grid_sample")
    mb.train.unregister_gradient("grid_sample")         # every op has a rule: take one away
    try:
        with pytest.raises(mb.MLCError, match=r"the op 'grid_sample' \(call '[^']*'\) has no "
                                              r"gradient rule.*Instead: register one"):
            mb.train.grad(f, wrt=["x"])
    finally:
        mb.train.register_gradient("grid_sample")(rule)


@pytest.mark.parametrize("axis, largest", [(-1, 1), (0, 0)])
def test_topk_sends_each_value_back_to_where_it_was(axis, largest):
    rng = np.random.default_rng(3)
    x = rng.permutation(24).reshape(4, 6) + rng.uniform(0, 0.5, (4, 6))   # no ties
    check(lambda v: TupleGetItem(op.topk(v, k=3, axis=axis, largest=largest), 0), {"x": x})


@pytest.mark.parametrize("axes, keepdims", [((1,), 1), ((0, 2), 0), (None, 0)])
def test_prod_with_no_one_or_two_zeros_in_a_line(axes, keepdims):
    rng = np.random.default_rng(11)
    x = rng.uniform(0.5, 1.5, (3, 4, 2)) * rng.choice([-1, 1], (3, 4, 2))
    x[0, 1, 0] = 0.0                      # one zero in some lines
    x[2, 0, 1] = x[2, 3, 1] = 0.0         # two zeros in another
    check(lambda v: op.prod(v, axes=axes, keepdims=keepdims), {"x": x})


def test_a_gradient_through_a_bit_op_says_it_is_not_differentiable():
    x = Var("x", TensorType((3,), "float32"))
    f = Function([x], op.sum(op.bitcast(x, dtype="float32"), keepdims=0))
    with pytest.raises(mb.errors.NoGradientError, match=r"the op 'bitcast' \(call .*\) is not "
                       r"differentiable: it works on the bits of its input.*Instead: stop the "
                       r"gradient before it"):
        mb.train.grad(f, wrt=["x"])


def test_blocked_layout_ops_have_the_gradients_of_the_plain_layout():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 16, 5, 4)), rng.standard_normal((2, 2, 3, 3, 8, 8))
    check(lambda v: op.to_blocked(v, block=8), {"x": x})
    check(lambda v: op.from_blocked(v), {"x": rng.standard_normal((1, 2, 3, 3, 8))})
    check(lambda a, b: op.conv_nchwc(op.to_blocked(a, block=8), b, pads=(1, 0, 1, 2),
                                     strides=(2, 1)), {"x": x, "w": w})


def test_padded_and_grouped_blocked_layouts_have_the_gradients_of_the_plain_layout():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 10, 3, 2))       # 2 groups of 5 channels, blocks of 4: padded
    check(lambda v: op.to_blocked(v, block=4, groups=2), {"x": x})
    check(lambda v: op.from_blocked(v, channels=10, groups=2),
          {"x": rng.standard_normal((1, 4, 3, 2, 4))})
    w = rng.standard_normal((4, 1, 3, 3, 4, 4))   # 2 groups: 8 in, 8 out per group
    check(lambda a, b: op.conv_nchwc(op.to_blocked(a, block=4), b, pads=(1, 1, 1, 1), group=2),
          {"x": rng.standard_normal((1, 8, 4, 4)), "w": w})


def test_a_blocked_depthwise_conv_has_the_gradients_of_the_plain_layout():
    rng = np.random.default_rng(7)
    check(lambda a, b: op.depthwise_nchwc(op.to_blocked(a, block=4), b, pads=(1, 0, 1, 1),
                                          strides=(2, 1)),
          {"x": rng.standard_normal((1, 8, 5, 4)), "w": rng.standard_normal((2, 3, 3, 4))})


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_lrn_gradient(size):
    rng = np.random.default_rng(size)
    check(lambda v: op.lrn(v, size=size, alpha=0.3, beta=0.75, bias=1.5),
          {"x": rng.standard_normal((2, 6, 3, 2))})


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_running_sum_and_product(name, exclusive, reverse):
    x = np.random.default_rng(exclusive + 2 * reverse).standard_normal((3, 4, 2))
    x[1, 2, 0] = x[2, 0, 1] = 0.0     # a zero term: cumprod's gradient must not divide by it
    for axis in (1, -1):
        check(lambda v: getattr(op, name)(v, axis=axis, exclusive=exclusive, reverse=reverse),
              {"x": x})


@pytest.mark.parametrize("interleaved,dim", [(0, 0), (1, 0), (0, 4), (1, 4)])
def test_rotary_embedding(interleaved, dim):
    rng = np.random.default_rng(interleaved + dim)
    half = (dim or 6) // 2
    check(lambda *v: op.rotary_embedding(*v, interleaved=interleaved, rotary_embedding_dim=dim),
          {"x": rng.standard_normal((2, 3, 4, 6)), "cos": rng.standard_normal((2, 4, half)),
           "sin": rng.standard_normal((2, 4, half))})
