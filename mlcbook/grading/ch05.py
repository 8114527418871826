"""Checkers for chapter 5, *End-to-end model execution*: graph functions, operators, ONNX.

Each exercise is judged by running what the student built on freshly drawn shapes, weights
and attributes — through the graph IR's reference evaluator and, where the exercise adds an
operator, through the compiler too — against numpy, and by reading the graph (which calls it
makes, which weights it names). Two helpers are public because the notebook uses them:

* :func:`scratch_registry` — ops and ONNX converters registered inside it are gone after it,
  so that trying an operator in the notebook, or grading it, leaves the library as it was;
* :func:`bn_training_model` — the ONNX model with ``BatchNormalization(training_mode=1)``
  that the last exercise repairs.
"""

from __future__ import annotations

import contextlib
from typing import Iterable, Iterator

import numpy as np

from ..errors import MLCError
from .compare import Fail, NotImplementedAnswer, student_line, call, describe, expect_array, randn, trial
from .registry import exercise


def _run(what: str, fn, *args):
    """``fn(*args)`` for library code run on the student's objects: any error is a Fail."""
    try:
        return fn(*args)
    except MLCError as err:
        raise Fail(f"{what} raised {type(err).__name__}: {err}") from None
    except Exception as err:  # noqa: BLE001 - the student's code runs inside the library here
        raise Fail(f"{what} raised {type(err).__name__}: {err}{student_line(err)}") from None


# --- 05.call_tir_mlp -------------------------------------------------------------------------
def _mlp_reference(x, W0, b0, W1, b1, relu=True, bias0=True, relu_out=False):
    h = x.astype(np.float64) @ W0.T.astype(np.float64) + (b0 if bias0 else 0)
    y = (np.maximum(h, 0) if relu else h) @ W1.T.astype(np.float64) + b1
    return np.maximum(y, 0) if relu_out else y


_PARAMS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def _check_mlp_graph(mod, batch, arrays) -> None:
    from ..graph import Call, CallTIR, Constant, Function, post_order
    from ..graph.interpret import main_function
    from ..tir.function import IRModule, PrimFunc
    if not isinstance(mod, IRModule):
        raise Fail(f"mlp_module should return an IRModule (bb.get()), got {type(mod).__name__}",
                   about_inputs=False)
    main = mod.functions.get("main")
    if not isinstance(main, Function):
        raise Fail("the module has no graph function named 'main'; define it with "
                   "`with bb.function(\"main\", [x]):`", about_inputs=False)
    main_function(mod)
    in_shape = (batch, arrays[0].shape[1])
    if len(main.params) != 1 or main.params[0].type.shape != in_shape:
        got = ", ".join(f"{p.name}: {p.type}" for p in main.params) or "none"
        raise Fail(f"main should take one input of shape {in_shape}, float32; it takes {got}")
    ops = [n for n in post_order(main.body) if isinstance(n, Call)]
    if ops:
        raise Fail(f"main calls the op {ops[0].op!r} (call {ops[0].name!r}): in this exercise "
                   "you write the kernels yourself, as PrimFuncs, and call them with "
                   "bb.call_tir", about_inputs=False)
    calls = [n for n in post_order(main.body) if isinstance(n, CallTIR)]
    for c in calls:
        if c.func == "main":
            raise Fail("a call_tir calls 'main', which is the graph function itself: your "
                       "PrimFunc is named 'main' (te.create_prim_func's default name), and the "
                       "graph function 'main' replaced it in the module; give each PrimFunc its "
                       "own name: te.create_prim_func([...], name=\"linear_relu\")",
                       about_inputs=False)
        if not isinstance(mod.functions.get(c.func), PrimFunc):
            raise Fail(f"call_tir {c.name!r} calls {c.func!r}, which is not a PrimFunc of the "
                       "module; pass the PrimFunc object itself to bb.call_tir")
    if len(calls) != 2:
        names = ", ".join(c.func for c in calls) or "none"
        hint = (" — fuse the first linear layer and its relu into one PrimFunc, linear_relu, "
                "as chapter 1's lnumpy_linear_relu did" if len(calls) == 3 else "")
        raise Fail(f"main makes {len(calls)} call_tir calls ({names}); the exercise asks for "
                   f"two: linear_relu, then linear{hint}", about_inputs=False)
    weights = main.weights
    if set(weights) != set(_PARAMS):
        anon = any(isinstance(a, Constant) and not a.name for c in calls for a in c.args)
        raise Fail(f"the weights should be the parameters {', '.join(_PARAMS)}; main has "
                   f"{', '.join(sorted(weights)) or 'no named weights'}",
                   "make each weight a named parameter with bb.param(\"fc1.weight\", W0), ..."
                   if anon or not weights else None, about_inputs=False)
    for name, given in zip(_PARAMS, arrays):
        w = weights[name].data
        if w.shape != given.shape or not np.array_equal(w, given):
            raise Fail(f"W[{name!r}] holds an array of shape {w.shape} that is not the one "
                       f"passed in (shape {given.shape}); store each weight as given and "
                       "index it in the kernel (W[j, k] for X @ W.T)")


@exercise("05.call_tir_mlp", points=3, answer="mlp_module",
          title="The MLP as a graph function calling a fused kernel")
def _check_call_tir_mlp(answer, rng):
    from ..graph import interpret
    cases = [(1, 9, 5, 3), (3, 6, 10, 2), (int(rng.integers(2, 5)), int(rng.integers(5, 12)),
                                           int(rng.integers(3, 9)), int(rng.integers(2, 6)))]
    for batch, k, m, o in cases:
        W0, b0 = randn(rng, (m, k)), randn(rng, (m,))
        W1, b1 = randn(rng, (o, m)), randn(rng, (o,))
        x = randn(rng, (batch, k))
        with trial(f"batch {batch}, " + describe(W0=W0, W1=W1)):
            mod = call(answer, "mlp_module", W0, b0, W1, b1, batch)
            _check_mlp_graph(mod, batch, (W0, b0, W1, b1))
            got = _run("running main with mb.graph.interpret", interpret, mod, x)
            expect_array("the output", got, _mlp_reference(x, W0, b0, W1, b1), mistakes=[
                (lambda: _mlp_reference(x, W0, b0, W1, b1, relu=False),
                 "the output is the MLP without relu: linear_relu must apply max(..., 0)"),
                (lambda: _mlp_reference(x, W0, b0, W1, b1, relu_out=True),
                 "relu was applied to the output too: the second layer is linear only"),
                (lambda: _mlp_reference(x, W0, b0, W1, b1, bias0=False),
                 "the first layer's bias is missing: Y = relu(X @ W.T + B)"),
            ])
    return (f"two call_tirs (a fused linear_relu, then linear) with named weights; matches "
            f"numpy on {len(cases)} fresh sizes")


# --- 05.infer_matmul ------------------------------------------------------------------------------
def _np_matmul_shape(a, b) -> tuple[int, ...] | None:
    try:
        return np.matmul(np.zeros(a, np.float32), np.zeros(b, np.float32)).shape
    except ValueError:
        return None


def _matmul_cases(rng) -> list[tuple[tuple, tuple, str]]:
    d = [int(v) for v in rng.choice(np.arange(2, 9), size=6, replace=False)]
    n, k, m, b, c, k2 = d
    return [
        ((n, k), (k, m), "2-D @ 2-D"),
        ((b, n, k), (k, m), "a batch of matrices @ one matrix"),
        ((b, 1, n, k), (c, k, m), "batch dimensions that broadcast"),
        ((1, n, k), (b, k, m), "a batch of 1 that broadcasts"),
        ((k,), (k, m), "1-D @ 2-D"),
        ((b, n, k), (k,), "3-D @ 1-D"),
        ((k,), (k,), "1-D @ 1-D"),
        ((n, k), (k2, m), "inner dimensions that differ"),
        ((b, n, k), (c, k, m), "batch dimensions that cannot broadcast"),
        ((), (k, m), "a scalar"),
    ]


_ONE_D_HINT = ("numpy's rules for 1-D operands: A of shape (k,) acts as (1, k) and B of shape "
               "(k,) as (k, 1), and that added dimension is removed from the result")
_BATCH_HINT = ("the batch dimensions (all but the last two) broadcast like numpy: (b, 1) with "
               "(c,) gives (b, c)")


def _infer(answer, types):
    """(result, exception) of ``answer(types, {})``; the stub and non-functions fail."""
    if answer is None:
        raise NotImplementedAnswer("got None instead of your function infer_matmul")
    if not callable(answer):
        raise Fail(f"expected your function infer_matmul, got {type(answer).__name__}",
                   about_inputs=False)
    try:
        return answer(types, {}), None
    except NotImplementedError:
        raise NotImplementedAnswer("infer_matmul raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except Exception as err:  # noqa: BLE001 - judged below
        return None, err


@exercise("05.infer_matmul", points=2, answer="infer_matmul",
          title="Shape and dtype inference for a batched matmul")
def _check_infer_matmul(answer, rng):
    from ..errors import OpDTypeError, OpShapeError
    from ..ops.types import TensorType
    for a, b, what in _matmul_cases(rng):
        expected = _np_matmul_shape(a, b)
        label = f"A {a} @ B {b} ({what})"
        got, err = _infer(answer, (TensorType(a, "float32"), TensorType(b, "float32")))
        if err is not None:
            raised = f"infer_matmul raised {type(err).__name__}: {err}{student_line(err)}"
            if expected is not None:
                raise Fail(f"for {label} {raised}; numpy's matmul gives shape {expected}")
            if not isinstance(err, OpShapeError):
                raise Fail(f"for {label} {raised}",
                           "raise mb.errors.OpShapeError(message) for shapes that do not fit: "
                           "an MLCError, which the user sees with its code and your message")
            if str(a) not in str(err) or str(b) not in str(err):
                raise Fail(f"for {label} the error says: {err}; its message should name both "
                           f"shapes as they print in Python, {a} and {b}, so the user sees "
                           "which call is wrong")
            continue
        if expected is None:
            raise Fail(f"for {label} infer_matmul returned {got!r}, but numpy cannot multiply "
                       "these shapes; raise mb.errors.OpShapeError naming both shapes")
        if not isinstance(got, TensorType):
            raise Fail(f"for {label} infer_matmul returned {type(got).__name__} {got!r:.60}; "
                       "return a TensorType(shape, dtype)")
        if got.shape != expected:
            hint = _ONE_D_HINT if 1 in (len(a), len(b)) else \
                _BATCH_HINT if max(len(a), len(b)) > 2 else None
            raise Fail(f"for {label} infer_matmul gives shape {got.shape}, numpy's matmul gives "
                       f"{expected}", hint)
        if got.dtype != "float32":
            raise Fail(f"for {label} of float32 tensors the result has dtype {got.dtype}; "
                       "the result has the inputs' dtype")
    n, k = (int(v) for v in rng.integers(2, 6, size=2))
    got, err = _infer(answer, (TensorType((n, k), "int32"), TensorType((k, n), "int32")))
    if err is not None or not isinstance(got, TensorType) or got.dtype != "int32":
        why = f"raised {type(err).__name__}: {err}" if err is not None else f"gave {got!r}"
        raise Fail(f"int32 {(n, k)} @ int32 {(k, n)} should be an int32 tensor, but "
                   f"infer_matmul {why}")
    got, err = _infer(answer, (TensorType((n, k), "float32"), TensorType((k, n), "int32")))
    if err is None:
        raise Fail(f"float32 @ int32 gave {got!r}; mixed dtypes must raise "
                   "mb.errors.OpDTypeError (the user should insert a cast)")
    if not isinstance(err, OpDTypeError):
        raise Fail(f"float32 @ int32 raised {type(err).__name__}: {err}",
                   "raise mb.errors.OpDTypeError when the dtypes differ")
    return "numpy's shapes in every case, and errors for shapes and dtypes that do not fit"


# --- 05.swiglu -----------------------------------------------------------------------------------
@contextlib.contextmanager
def scratch_registry(ops: Iterable[str] = (), converters: Iterable[str] = ()) -> Iterator[None]:
    """Inside the block, the ops named in ``ops`` and ONNX converters named in ``converters``
    are absent (so they can be registered afresh); after it, the op registry and the ONNX
    converters are exactly as before, whatever the block registered or replaced.

        >>> with scratch_registry(ops=["softsign"], converters=["Softsign"]):
        ...     register_softsign()        # the built-in hidden, yours tried; gone after it
    """
    from ..frontend.onnx_ops import CONVERTERS
    from ..ops import registry
    saved_ops = dict(registry._REGISTRY)
    saved_legalize = {name: op.legalize for name, op in saved_ops.items()}
    saved_converters = dict(CONVERTERS.written)   # a declared op's converter goes with it
    for name in ops:
        registry._REGISTRY.pop(name, None)
    for name in converters:
        CONVERTERS.pop(name, None)
    try:
        yield
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved_ops)
        for name, op in saved_ops.items():
            object.__setattr__(op, "legalize", saved_legalize[name])
        CONVERTERS.clear()
        CONVERTERS.update(saved_converters)


def _swiglu(a, b, alpha=1.0, gate=True, sigmoid=True):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = 1 / (1 + np.exp(-alpha * a64)) if sigmoid else a64
    return (a64 * s if gate else s) * b64


def _swiglu_mistakes(a, b, alpha):
    return [
        (lambda: _swiglu(a, b, alpha, gate=False),
         "the output is sigmoid(alpha * A) * B: Swish keeps its input as a factor, "
         "Y = A * sigmoid(alpha * A) * B"),
        (lambda: _swiglu(a, b, alpha, sigmoid=False),
         "the output is A * A * B: the gate goes through sigmoid, Y = A * sigmoid(alpha * A) * B"),
        (lambda: _swiglu(a, b), "this is SwiGLU with the default alpha = 1.0: use the alpha of "
                                "the call's attributes"),
        (lambda: _swiglu(b, a, alpha), "A and B are swapped: A is the gate (it goes through "
                                       "Swish), B the value it multiplies"),
    ]


def _swiglu_onnx(shape, alpha):
    from onnx import TensorProto, helper
    nodes = [helper.make_node("SwiGLU", ["a", "b"], ["y"], name="sg", alpha=alpha),
             helper.make_node("SwiGLU", ["a", "b"], ["y_default"], name="sg_default")]
    graph = helper.make_graph(
        nodes, "swiglu", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
                          for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ("y", "y_default")])
    # SwiGLU is in ONNX's default domain from opset 28
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])


def _expect_error(what: str, fn, wanted, why: str) -> None:
    """``fn()`` must raise the MLCError subclass ``wanted``; anything else is a Fail."""
    try:
        got = fn()
    except wanted:
        return
    except Exception as err:  # noqa: BLE001 - the student's code runs inside the library here
        raise Fail(f"{what} raised {type(err).__name__}: {err}; raise "
                   f"mb.errors.{wanted.__name__} instead", about_inputs=False) from None
    raise Fail(f"{what} is inferred as {got}; {why}: raise mb.errors.{wanted.__name__}",
               about_inputs=False)


def _check_registered_op():
    from .. import ops
    from ..errors import OpDTypeError, OpShapeError
    from ..ops.types import TensorType
    if "swiglu" not in ops.list_ops():
        raise Fail("after register_swiglu() there is no op named 'swiglu'; register it with "
                   "mb.ops.register(\"swiglu\", ...)", about_inputs=False)
    op = ops.get("swiglu")
    if op.kind != ops.OpKind.ELEMWISE:
        raise Fail(f"swiglu is registered with kind {op.kind.name}; it is elementwise "
                   "(kind=mb.ops.OpKind.ELEMWISE), which operator fusion relies on",
                   about_inputs=False)
    if tuple(op.num_inputs) != (2, 2):
        raise Fail(f"swiglu takes {op.num_inputs} inputs (the registry's num_inputs); it takes "
                   "two, the gate A and the value B: register it with num_inputs=(2, 2)",
                   about_inputs=False)
    if dict(op.attrs) != {"alpha": 1.0}:
        raise Fail(f"swiglu's attributes are {dict(op.attrs)}; it has one, alpha, with ONNX's "
                   "default: attrs={\"alpha\": 1.0}", about_inputs=False)
    t = TensorType((3, 5, 2), "float32")
    got = _run("inferring the type of swiglu on two Tensor((3, 5, 2), float32)",
               op.infer_type, [t, t], {})
    if got != t:
        raise Fail(f"swiglu on two {t} is inferred as {got}; an elementwise op keeps its "
                   "inputs' type", about_inputs=False)
    ints = TensorType((4,), "int32")
    _expect_error("swiglu on two int32 tensors", lambda: op.infer_type([ints, ints], {}),
                  OpDTypeError, "it is defined for floating-point tensors only")
    _expect_error("swiglu on Tensor((3, 5)) and Tensor((5,))", lambda: op.infer_type(
        [TensorType((3, 5)), TensorType((5,))], {}), OpShapeError,
        "SwiGLU does not broadcast: A and B must have one shape")
    if op.legalize is None:
        raise Fail("swiglu has no legalization, so it cannot be compiled: register one with "
                   "@mb.ops.register_legalization(\"swiglu\")", about_inputs=False)
    return op


@exercise("05.swiglu", points=3, answer="register_swiglu",
          title="A new operator: inference, numpy reference, legalization, ONNX import")
def _check_swiglu(answer, rng):
    from .. import compile as mb_compile
    from .. import from_onnx, graph, tir
    from ..ops import legalize_call
    from ..ops.types import TensorType
    with scratch_registry(ops=["swiglu"], converters=["SwiGLU"]):
        call(answer, "register_swiglu")
        op = _check_registered_op()
        shape = tuple(int(v) for v in rng.integers(2, 7, size=3))
        alpha = float(rng.uniform(0.3, 2.0))
        a, b = randn(rng, shape, scale=3.0), randn(rng, shape)
        with trial(f"the numpy reference, A and B of shape {shape}, alpha={alpha:.3f}"):
            # called as the reference evaluator calls it: attributes by keyword
            got = _run("swiglu's numpy reference", lambda: op.reference(a, b, alpha=alpha))
            expect_array("the reference's result", np.asarray(got), _swiglu(a, b, alpha),
                         mistakes=_swiglu_mistakes(a, b, alpha))
        with trial(f"the legalization, A and B of shape {shape}, alpha={alpha:.3f}"):
            t = TensorType(shape, "float32")
            func = _run("legalizing swiglu", legalize_call, "swiglu", [t, t], {"alpha": alpha})
            out = np.zeros(shape, np.float32)
            _run("running the legalized PrimFunc in the interpreter", tir.interpret, func, a, b,
                 out)
            expect_array("the loop-IR result", out, _swiglu(a, b, alpha),
                         mistakes=_swiglu_mistakes(a, b, alpha))
        from ..frontend.onnx_ops import CONVERTERS
        if "SwiGLU" not in CONVERTERS:
            raise Fail("the ONNX importer does not know SwiGLU: register a converter with "
                       "@converter(\"SwiGLU\", attrs=(\"alpha\",))")
        shape = (int(rng.integers(2, 5)), int(rng.integers(17, 40)))
        alpha = float(rng.uniform(0.3, 2.0))
        a, b = randn(rng, shape, scale=3.0), randn(rng, shape)
        model = _swiglu_onnx(shape, alpha)
        with trial(f"an ONNX model with SwiGLU(alpha={alpha:.3f}) and SwiGLU() on A and B of "
                   f"shape {shape}"):
            mod = _run("mb.from_onnx", from_onnx, model)
            exe = _run("mb.compile", mb_compile, mod)
            a32 = float(np.float32(alpha))
            for label, run in (("mb.graph.interpret", lambda: graph.interpret(mod, a, b)),
                               ("the compiled model", lambda: exe(a, b))):
                y, y_default = _run(f"running {label}", run)
                expect_array(f"output y of {label}", y, _swiglu(a, b, a32),
                             mistakes=_swiglu_mistakes(a, b, a32))
                expect_array(f"output y_default of {label}", y_default, _swiglu(a, b),
                             mistakes=[(lambda: _swiglu(a, b, 0.0),
                                        "a node without the alpha attribute must use ONNX's "
                                        "default, alpha = 1.0")])
    return ("registered with inference, a dtype and a shape check; numpy reference, loop IR and "
            "the compiled ONNX model all match numpy")


# --- 05.fix_bn_training ---------------------------------------------------------------------------
def bn_training_model(channels: int = 3, out_channels: int = 4, size: int = 6,
                      epsilon: float = 1e-5, seed: int = 0):
    """``x (N, C, H, W) -> Conv 3x3 (pad 1, bias) -> BatchNormalization(training_mode=1) ->
    Relu -> y``, opset 17, with a symbolic batch ``N`` and random weights from ``seed``.

    In training mode, BatchNormalization normalizes with the mean and variance of the
    *batch* (over axes 0, 2, 3), not with its ``input_mean`` / ``input_var`` inputs; those
    only feed its two extra outputs, the updated running statistics.
    """
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)

    def init(name, arr):
        return numpy_helper.from_array(np.asarray(arr, np.float32), name)

    co = out_channels
    inits = [init("conv.weight", rng.standard_normal((co, channels, 3, 3)) * 0.5),
             init("conv.bias", rng.standard_normal(co)),
             init("bn.scale", 1 + 0.3 * rng.standard_normal(co)),
             init("bn.bias", 0.3 * rng.standard_normal(co)),
             init("bn.running_mean", 0.5 * rng.standard_normal(co)),
             init("bn.running_var", 0.5 + rng.random(co))]
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["h"], name="conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization",
                         ["h", "bn.scale", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["bn", "bn.new_mean", "bn.new_var"], name="bn", epsilon=epsilon,
                         momentum=0.9, training_mode=1),
        helper.make_node("Relu", ["bn"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "conv_bn_train",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", channels, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", co, size, size])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _bn_reference(model, x, axes=(0, 2, 3), ddof=0, stored=False, use_eps=True):
    """What :func:`bn_training_model` computes, in numpy (float64)."""
    from onnx import numpy_helper
    w = {i.name: numpy_helper.to_array(i).astype(np.float64) for i in model.graph.initializer}
    eps = next(a.f for a in model.graph.node[1].attribute if a.name == "epsilon")
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    h = np.einsum("ncyxhw,ochw->noyx", win, w["conv.weight"]) + w["conv.bias"][:, None, None]
    if stored:
        mean, var = (w[n][None, :, None, None] for n in ("bn.running_mean", "bn.running_var"))
    else:
        mean = h.mean(axis=axes, keepdims=True)
        var = h.var(axis=axes, keepdims=True, ddof=ddof)
    c = (slice(None), None, None)
    y = (h - mean) / np.sqrt(var + (eps if use_eps else 0)) * w["bn.scale"][c] + w["bn.bias"][c]
    return np.maximum(y, 0)


@exercise("05.fix_bn_training", points=3, answer="fix_model",
          title="Repair an ONNX model that uses an unsupported attribute")
def _check_fix_bn_training(answer, rng):
    import onnx

    from .. import from_onnx, graph
    from ..errors import InvalidModelError, UnsupportedModelError
    cases = [(3, 4, 6, 1e-5, 2), (2, 5, 5, 1e-2, 3),
             (int(rng.integers(1, 4)), int(rng.integers(2, 6)), int(rng.integers(4, 8)),
              float(rng.choice([1e-3, 1e-2, 0.1])), int(rng.integers(2, 4)))]
    for channels, co, size, eps, batch in cases:
        original = bn_training_model(channels, co, size, eps, seed=int(rng.integers(1 << 30)))
        x = randn(rng, (batch, channels, size, size))
        with trial(f"C={channels} -> {co} channels, {size}x{size} images, batch {batch}, "
                   f"epsilon={eps:g}"):
            fixed = call(answer, "fix_model", onnx.ModelProto.FromString(
                original.SerializeToString()))
            if fixed is None:
                raise Fail("fix_model returned None: return the repaired onnx.ModelProto",
                           about_inputs=False)
            if not isinstance(fixed, onnx.ModelProto):
                raise Fail(f"fix_model should return an onnx.ModelProto, got "
                           f"{type(fixed).__name__}", about_inputs=False)
            ins = [i.name for i in fixed.graph.input
                   if i.name not in {t.name for t in fixed.graph.initializer}]
            outs = [o.name for o in fixed.graph.output]
            if ins != ["x"] or outs != ["y"]:
                raise Fail(f"the repaired model has inputs {ins} and outputs {outs}; keep the "
                           "original ones, ['x'] and ['y']")
            try:
                mod = from_onnx(fixed, batch_size=batch)
            except UnsupportedModelError as err:
                raise Fail("mlcbook still cannot import the repaired model:\n"
                           + str(err).split("\nSupported ops")[0]) from None
            except InvalidModelError as err:
                raise Fail(f"the repaired model is not valid ONNX: {err}") from None
            except MLCError as err:
                raise Fail(f"importing the repaired model raised {type(err).__name__}: "
                           f"{err}") from None
            got = _run("running the imported model", graph.interpret, mod, x)
            expect_array("y", got, _bn_reference(original, x), rtol=1e-4, atol=1e-4, mistakes=[
                (lambda: _bn_reference(original, x, stored=True),
                 "this is batch normalization with the stored running mean and variance, "
                 "what training_mode=0 computes; in training mode the output is normalized "
                 "with the mean and variance of the batch itself"),
                (lambda: _bn_reference(original, x, axes=(2, 3)),
                 "the statistics were taken per image (axes 2, 3); batch normalization takes "
                 "them over the whole batch too: axes 0, 2, 3"),
                (lambda: _bn_reference(original, x, ddof=1),
                 "the variance was divided by n - 1; ONNX uses the population variance "
                 "(divide by n), the mean of the squared deviations"),
                (lambda: _bn_reference(original, x, use_eps=False),
                 f"this is y without this node's epsilon ({eps:g}), or with a much smaller "
                 "one such as ONNX's default 1e-5: normalize by sqrt(var + epsilon), reading "
                 "epsilon from the node's attributes"),
            ])
    return f"imports and matches BatchNormalization in training mode on {len(cases)} models"


__all__ = ["scratch_registry", "bn_training_model"]
