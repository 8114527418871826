"""Chapter 5's exercises: plausible wrong answers earn zero, and grading an operator leaves
the op registry and the ONNX converters as they were.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.frontend import CONVERTERS
from mlcbook.frontend.onnx_ops import converter
from mlcbook.grading.ch05 import _bn_reference, bn_training_model, scratch_registry
from mlcbook.graph import TensorType

from .conftest import solution, zero


# --- 05.call_tir_mlp -----------------------------------------------------------------------------
def _linear(n, k, m, relu, bias=True, name=None):
    te = mb.te
    X, W = te.placeholder((n, k), name="X"), te.placeholder((m, k), name="W")
    B = te.placeholder((m,), name="B")
    r = te.reduce_axis(k, name="r")
    Z = te.compute((n, m), lambda i, j: te.sum(X[i, r] * W[j, r], axis=r), name="Z")
    Y = te.compute((n, m), lambda i, j: (mb.tir.max(Z[i, j] + B[j], 0.0) if relu else
                                         Z[i, j] + B[j]) if bias else
                   (mb.tir.max(Z[i, j], 0.0) if relu else Z[i, j]), name="Y")
    return te.create_prim_func([X, W, B, Y], name=name or ("linear_relu" if relu else "linear"))


def _relu_func(n, m):
    X = mb.te.placeholder((n, m), name="X")
    return mb.te.create_prim_func([X, mb.te.compute((n, m), lambda i, j: mb.tir.max(X[i, j], 0.0),
                                                    name="Y")], name="relu")


def _mlp(relu=True, bias0=True, fused=True, named=True, transposed=False, op_relu=False,
         kernel_name=None):
    def mlp_module(W0, b0, W1, b1, batch):
        m, k = W0.shape
        o = W1.shape[0]
        bb = mb.graph.Builder()
        x = bb.input("x", (batch, k))

        def param(name, a):
            return bb.param(name, a) if named else mb.graph.Constant(a)

        w0 = param("fc1.weight", W0.T.copy() if transposed else W0)
        with bb.function("main", [x]):
            if fused:
                h = bb.call_tir(_linear(batch, k, m, relu, bias0, kernel_name),
                                [x, w0, param("fc1.bias", b0)],
                                TensorType((batch, m)))
            else:
                h = bb.call_tir(_linear(batch, k, m, False, bias0), [x, w0, param("fc1.bias", b0)],
                                TensorType((batch, m)))
                h = (mb.graph.op.relu(h) if op_relu else
                     bb.call_tir(_relu_func(batch, m), [h], TensorType((batch, m))))
            y = bb.call_tir(_linear(batch, m, o, False), [h, param("fc2.weight", W1),
                                                          param("fc2.bias", b1)],
                            TensorType((batch, o)))
            bb.ret(y)
        return bb.get()
    return mlp_module


def test_mlp_reference_form_passes():
    assert grading.check("05.call_tir_mlp", _mlp()).passed


def test_mlp_unfused_three_kernels():
    message = zero("05.call_tir_mlp", _mlp(fused=False))
    assert "main makes 3 call_tir calls" in message
    assert "fuse the first linear layer and its relu into one PrimFunc" in message


def test_mlp_using_an_op_call():
    message = zero("05.call_tir_mlp", _mlp(fused=False, op_relu=True))
    assert "main calls the op 'relu'" in message and "bb.call_tir" in message


def test_mlp_missing_relu():
    message = zero("05.call_tir_mlp", _mlp(relu=False))
    assert "values differ: the output[" in message
    assert "the MLP without relu: linear_relu must apply max(..., 0)" in message


def test_mlp_missing_first_bias():
    assert "the first layer's bias is missing" in zero("05.call_tir_mlp", _mlp(bias0=False))


def test_mlp_anonymous_weights():
    message = zero("05.call_tir_mlp", _mlp(named=False))
    assert "no named weights" in message and 'bb.param("fc1.weight", W0)' in message


def test_mlp_weight_stored_transposed():
    message = zero("05.call_tir_mlp", _mlp(transposed=True))
    assert "W['fc1.weight'] holds an array of shape" in message and "store each weight" in message


def test_mlp_kernel_left_with_te_default_name_main():
    message = zero("05.call_tir_mlp", _mlp(kernel_name="main"))
    # the builder refuses the clash itself, and the grader passes its message on
    assert "would replace the PrimFunc 'main'" in message and "another name" in message


def test_mlp_returns_a_function_not_a_module():
    message = zero("05.call_tir_mlp", lambda *a: _mlp()(*a)["main"])
    assert "should return an IRModule" in message


# --- 05.infer_matmul -----------------------------------------------------------------------------
def _infer(broadcast=True, one_d=True, check_inner=True, error=mb.errors.OpShapeError,
           name_shapes=True, check_dtype=True):
    def infer_matmul(types, attrs):
        a, b = types
        if check_dtype and a.dtype != b.dtype:
            raise mb.errors.OpDTypeError("dtypes differ")
        what = f"A {a.shape} and B {b.shape}" if name_shapes else "the shapes"
        if a.ndim == 0 or b.ndim == 0:
            raise error(f"matmul of a scalar: {what}")
        sa = (1,) + a.shape if a.ndim == 1 and one_d else a.shape
        sb = b.shape + (1,) if b.ndim == 1 and one_d else b.shape
        if len(sa) < 2 or len(sb) < 2:
            sa, sb = (1,) * (2 - len(sa)) + sa, (1,) * (2 - len(sb)) + sb
        if check_inner and sa[-1] != sb[-2]:
            raise error(f"inner dimensions differ: {what}")
        ba, bb = sa[:-2], sb[:-2]
        if broadcast:
            nd = max(len(ba), len(bb))
            ba, bb = (1,) * (nd - len(ba)) + ba, (1,) * (nd - len(bb)) + bb
            batch = []
            for x, y in zip(ba, bb):
                if x != y and 1 not in (x, y):
                    raise error(f"batch dimensions differ: {what}")
                batch.append(y if x == 1 else x)
        else:
            if ba and bb and ba != bb:
                raise error(f"batch dimensions differ: {what}")
            batch = list(ba or bb)
        rows = (sa[-2],) if a.ndim > 1 or not one_d else ()
        cols = (sb[-1],) if b.ndim > 1 or not one_d else ()
        return TensorType(tuple(batch) + rows + cols, a.dtype)
    return infer_matmul


def test_infer_reference_form_passes():
    assert grading.check("05.infer_matmul", _infer()).passed


def test_infer_without_batch_broadcasting():
    message = zero("05.infer_matmul", _infer(broadcast=False))
    assert "batch dimensions that broadcast" in message and "raised OpShapeError" in message
    assert "numpy's matmul gives shape" in message


def test_infer_ignoring_the_1d_rules():
    message = zero("05.infer_matmul", _infer(one_d=False))
    assert "(1-D @ 2-D) infer_matmul gives shape (1, " in message
    assert "A of shape (k,) acts as (1, k)" in message


def test_infer_not_checking_inner_dimensions():
    message = zero("05.infer_matmul", _infer(check_inner=False))
    assert "(inner dimensions that differ) infer_matmul returned" in message
    assert "raise mb.errors.OpShapeError naming both shapes" in message


def test_infer_raising_value_error():
    message = zero("05.infer_matmul", _infer(error=ValueError))
    assert "infer_matmul raised ValueError" in message
    assert "raise mb.errors.OpShapeError(message)" in message


def test_infer_error_not_naming_the_shapes():
    message = zero("05.infer_matmul", _infer(name_shapes=False))
    assert "its message should name both shapes" in message


def test_infer_ignoring_dtypes():
    message = zero("05.infer_matmul", _infer(check_dtype=False))
    assert "float32 @ int32 gave" in message and "OpDTypeError" in message


# --- 05.swiglu ----------------------------------------------------------------------------------
def _swiglu(gate=True, kind=mb.ops.OpKind.ELEMWISE, dtype_check=True, shape_check=True,
            legalization=True, onnx_converter=True, use_attrs=True, num_inputs=(2, 2)):
    def register():
        def infer(types, attrs):
            if dtype_check and types[0].dtype != "float32":
                raise mb.errors.OpDTypeError("floats only")
            if shape_check and types[0].shape != types[1].shape:
                raise mb.errors.OpShapeError("one shape")
            return types[0]

        def reference(a, b, alpha):
            s = 1 / (1 + np.exp(-alpha * a))
            return ((a * s if gate else s) * b).astype(a.dtype)

        mb.ops.register("swiglu", kind=kind, infer=infer, reference=reference,
                        attrs={"alpha": 1.0}, num_inputs=num_inputs)
        if legalization:
            @mb.ops.register_legalization("swiglu")
            def legalize(ins, attrs, out_type):
                a, b = ins

                def f(*i):
                    s = mb.tir.sigmoid(a[i] * attrs["alpha"])
                    return (a[i] * s if gate else s) * b[i]
                return mb.te.compute(out_type.shape, f, name="swiglu")
        if onnx_converter:
            @converter("SwiGLU", attrs=("alpha",))
            def convert(cx, inputs, attrs):
                if not use_attrs:
                    return cx.call("swiglu", inputs[0], inputs[1])
                return cx.call("swiglu", inputs[0], inputs[1], alpha=attrs.get("alpha", 1.0))
    return register


def _registry_state():
    return (mb.ops.list_ops(), sorted(CONVERTERS),
            {name: mb.ops.get(name).legalize for name in mb.ops.list_ops()})


def test_swiglu_is_not_built_in():
    # the exercise adds an op mlcbook does not have
    assert "swiglu" not in mb.ops.list_ops() and "SwiGLU" not in CONVERTERS


def test_swiglu_reference_form_passes_and_leaves_no_trace():
    before = _registry_state()
    assert grading.check("05.swiglu", _swiglu()).passed
    assert _registry_state() == before
    assert "swiglu" not in mb.ops.list_ops() and "SwiGLU" not in CONVERTERS


def test_swiglu_check_works_when_the_student_already_registered_it():
    """A student who ran the op's registration in the notebook still gets graded, and keeps
    the registration afterwards."""
    with scratch_registry():
        solution(5)["register_swiglu"]()
        mine = mb.ops.get("swiglu")
        assert grading.check("05.swiglu", solution(5)["register_swiglu"]).passed
        assert mb.ops.get("swiglu") is mine and "SwiGLU" in CONVERTERS
    assert "swiglu" not in mb.ops.list_ops()


def test_a_failing_answer_leaves_no_trace():
    def half_done():
        _swiglu(onnx_converter=False)()
        raise RuntimeError("oops")
    before = _registry_state()
    message = zero("05.swiglu", half_done)
    assert "register_swiglu raised RuntimeError: oops" in message
    assert _registry_state() == before


def test_an_answer_that_replaces_another_ops_legalization_is_undone():
    relu_legalize = mb.ops.get("relu").legalize

    def vandal():
        _swiglu()()
        mb.ops.register_legalization("relu")(lambda ins, attrs, out_type: None)
    grading.check("05.swiglu", vandal)
    assert mb.ops.get("relu").legalize is relu_legalize


def test_swiglu_without_the_gate_factor():
    message = zero("05.swiglu", _swiglu(gate=False))
    assert "on the numpy reference" in message
    assert "Swish keeps its input as a factor" in message


def test_swiglu_wrong_kind():
    message = zero("05.swiglu", _swiglu(kind=mb.ops.OpKind.INJECTIVE))
    assert "registered with kind INJECTIVE" in message and "OpKind.ELEMWISE" in message


def test_swiglu_registered_with_one_input():
    message = zero("05.swiglu", _swiglu(num_inputs=(1, 1)))
    assert "num_inputs=(2, 2)" in message


def test_swiglu_without_dtype_check():
    message = zero("05.swiglu", _swiglu(dtype_check=False))
    assert "on two int32 tensors is inferred as" in message and "OpDTypeError" in message


def test_swiglu_that_broadcasts():
    message = zero("05.swiglu", _swiglu(shape_check=False))
    assert "SwiGLU does not broadcast" in message and "OpShapeError" in message


def test_swiglu_without_legalization():
    message = zero("05.swiglu", _swiglu(legalization=False))
    assert "has no legalization" in message and "register_legalization" in message


def test_swiglu_without_converter():
    message = zero("05.swiglu", _swiglu(onnx_converter=False))
    assert "the ONNX importer does not know SwiGLU" in message


def test_swiglu_converter_ignoring_attributes():
    message = zero("05.swiglu", _swiglu(use_attrs=False))
    assert "output y of mb.graph.interpret" in message
    assert "use the alpha of the call's attributes" in message


# --- 05.fix_bn_training --------------------------------------------------------------------------
def test_the_grader_reference_is_what_onnx_and_onnxruntime_compute():
    model = bn_training_model(3, 4, 5, epsilon=1e-2, seed=7)
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 5)).astype(np.float32)
    (by_onnx,) = ReferenceEvaluator(model).run(None, {"x": x})
    (by_ort,) = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(_bn_reference(model, x), by_onnx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_bn_reference(model, x), by_ort, rtol=1e-4, atol=1e-5)


def test_solution_repair_matches_onnxruntime_on_the_original():
    model = bn_training_model(2, 3, 7, epsilon=1e-3, seed=1)
    x = np.random.default_rng(1).standard_normal((3, 2, 7, 7)).astype(np.float32)
    (by_ort,) = ort.InferenceSession(model.SerializeToString(),
                                     providers=["CPUExecutionProvider"]).run(None, {"x": x})
    fixed = solution(5)["fix_model"](onnx.ModelProto.FromString(model.SerializeToString()))
    exe = mb.compile(mb.from_onnx(fixed, batch_size=3))
    np.testing.assert_allclose(exe(x), by_ort, rtol=1e-4, atol=1e-4)


def _fix(axes=(0, 2, 3), epsilon=None, use_eps=True):
    """fix_model written with the given statistics axes and epsilon (None: the node's)."""
    def fix_model(model):
        g = model.graph
        k, bn = next((i, n) for i, n in enumerate(g.node) if n.op_type == "BatchNormalization")
        eps = epsilon if epsilon is not None else \
            next(a.f for a in bn.attribute if a.name == "epsilon")
        w = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        g.initializer.extend([numpy_helper.from_array(w[bn.input[1]].reshape(-1, 1, 1), "s"),
                              numpy_helper.from_array(w[bn.input[2]].reshape(-1, 1, 1), "b"),
                              numpy_helper.from_array(np.array(eps, np.float32), "e")])
        x = bn.input[0]
        nodes = [helper.make_node("ReduceMean", [x], ["m"], axes=list(axes), keepdims=1),
                 helper.make_node("Sub", [x, "m"], ["d"]),
                 helper.make_node("Mul", ["d", "d"], ["d2"]),
                 helper.make_node("ReduceMean", ["d2"], ["v"], axes=list(axes), keepdims=1),
                 helper.make_node("Add", ["v", "e"], ["ve"]),
                 helper.make_node("Sqrt", ["ve" if use_eps else "v"], ["sd"]),
                 helper.make_node("Div", ["d", "sd"], ["n"]),
                 helper.make_node("Mul", ["n", "s"], ["ns"]),
                 helper.make_node("Add", ["ns", "b"], [bn.output[0]])]
        rest = list(g.node[:k]) + nodes + list(g.node[k + 1:])
        del g.node[:]
        g.node.extend(rest)
        return model
    return fix_model


def test_fix_reference_form_passes():
    assert grading.check("05.fix_bn_training", _fix()).passed


def test_fix_by_dropping_training_mode():
    def fix_model(model):
        bn = next(n for n in model.graph.node if n.op_type == "BatchNormalization")
        keep = [a for a in bn.attribute if a.name != "training_mode"]
        del bn.attribute[:]
        bn.attribute.extend(keep)
        del bn.output[1:]
        return model
    message = zero("05.fix_bn_training", fix_model)
    assert "values differ: y[" in message
    assert "with the stored running mean and variance, what training_mode=0 computes" in message


def test_fix_with_per_image_statistics():
    message = zero("05.fix_bn_training", _fix(axes=(2, 3)))
    assert "the statistics were taken per image (axes 2, 3)" in message


def test_fix_without_epsilon():
    message = zero("05.fix_bn_training", _fix(use_eps=False))
    assert "this is y without this node's epsilon" in message


def test_fix_with_a_hard_coded_epsilon():
    message = zero("05.fix_bn_training", _fix(epsilon=1e-5))
    assert "epsilon=0.01" in message and "values differ" in message
    assert "reading epsilon from the node's attributes" in message


def test_fix_returning_the_model_unchanged():
    message = zero("05.fix_bn_training", lambda model: model)
    assert message.startswith("mlcbook still cannot import the repaired model:")
    assert "training_mode=1 is not supported" in message


def test_fix_returning_nothing():
    assert "fix_model returned None" in zero("05.fix_bn_training", lambda model: None)


def test_fix_renaming_the_output():
    def fix_model(model):
        model = _fix()(model)
        model.graph.output[0].name = "out"
        return model
    assert "keep the original ones, ['x'] and ['y']" in zero("05.fix_bn_training", fix_model)
