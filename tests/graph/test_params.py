"""The roles of a graph function's weights: parameters, buffers, constants."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError
from mlcbook.graph import Constant, Function, Var
from mlcbook.graph.expr import Call
from mlcbook.graph.params import (BUFFER, CONSTANT, PARAMETER, Declared, declarations, declare,
                                  eval_form)
from mlcbook.ops import Attrs, TensorType

RNG = np.random.default_rng(0)


def _w(name, shape, dtype="float32"):
    return Constant(RNG.standard_normal(shape).astype(dtype), name)


def _fc(x, name, n_in, n_out):
    return Call("gemm", (x, _w(f"{name}.weight", (n_out, n_in)), _w(f"{name}.bias", (n_out,))),
                Attrs(trans_b=1), name)


def _mlp_with(extra):
    x = Var("x", TensorType((2, 4), "float32"))
    return Function([x], _fc(extra(_fc(x, "fc1", 4, 4)), "fc2", 4, 3))


def test_float_weights_are_parameters():
    d = declarations(_mlp_with(lambda h: h))
    assert d.parameters == ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
    assert d["fc1.weight"].reason == "a float weight of 'fc1'"


def test_a_0d_scalar_is_a_constant():
    f = _mlp_with(lambda h: Call("mul", (h, Constant(np.float32(0.5), "half"))))
    d = declarations(f)
    assert d["half"].kind == CONSTANT and d["half"].reason == "a 0-d scalar"
    assert "half" not in d.parameters


def test_a_one_element_operand_of_arithmetic_is_a_constant_but_a_one_unit_bias_trains():
    x = Var("x", TensorType((2, 4), "float32"))
    f = Function([x], Call("add", (_fc(x, "fc", 4, 1), Constant(np.ones(1, "float32"), "one"))))
    d = declarations(f)
    assert d["one"].kind == CONSTANT
    assert d["fc.bias"].kind == PARAMETER


def test_integer_weights_are_constants():
    x = Var("x", TensorType((2, 4), "float32"))
    f = Function([x], Call("reshape", (x,), Attrs(shape=(4, 2))))
    idx = Constant(np.array([0, 1], np.int64), "idx")
    g = Function([x], Call("gather", (x, idx), Attrs(axis=1)))
    assert declarations(f).constants == ()
    assert declarations(g)["idx"].kind == CONSTANT
    assert "int64" in declarations(g)["idx"].reason


def test_a_tensor_only_trilu_reads_is_a_mask_constant():
    mask = Call("trilu", (Constant(np.ones((4, 4), "float32"), "mask"),), Attrs(upper=0))
    f = _mlp_with(lambda h: Call("matmul", (h, mask)))
    d = declarations(f)
    assert d["mask"].kind == CONSTANT and "trilu" in d["mask"].reason


def _bn(op):
    x = Var("x", TensorType((2, 3, 4, 4), "float32"))
    args = [_w(f"bn.{n}", (3,)) for n in ("scale", "bias", "mean")]
    args.append(Constant(RNG.random(3).astype("float32") + 0.5, "bn.var"))
    attrs = Attrs(momentum=0.8) if op == "batch_norm_train" else Attrs()
    return Function([x], Call(op, (x, *args), attrs, "bn"))


def test_running_statistics_of_training_batch_norm_are_buffers_with_their_rule():
    d = declarations(_bn("batch_norm_train"))
    assert d.buffers == ("bn.mean", "bn.var")
    assert d["bn.mean"].update == ("running_mean", "bn")
    assert d["bn.var"].update == ("running_var", "bn")
    assert d["bn.var"].reason == "running variance of 'bn' (momentum 0.8)"
    assert d.parameters == ("bn.scale", "bn.bias")


def test_running_statistics_of_inference_batch_norm_are_constants():
    d = declarations(_bn("batch_norm"))
    assert d.constants == ("bn.mean", "bn.var")
    assert d.parameters == ("bn.scale", "bn.bias")


def test_the_dropout_counter_is_a_counting_buffer():
    x = Var("x", TensorType((2, 4), "float32"))
    f = Function([x], Call("dropout", (x, Constant(np.int64(0), "drop.counter")),
                           Attrs(ratio=0.2), "drop"))
    d = declarations(f)
    assert d["drop.counter"] == Declared("drop.counter", BUFFER,
                                         "the step counter of dropout 'drop'", ("count",))


def test_freeze_by_call_name_makes_its_weights_constants():
    f = declare(_mlp_with(lambda h: h), freeze=["fc1"])
    d = declarations(f)
    assert d.constants == ("fc1.weight", "fc1.bias")
    assert d["fc1.weight"].reason == "frozen (was a parameter)"
    assert d.parameters == ("fc2.weight", "fc2.bias")


def test_freeze_by_weight_name():
    d = declarations(declare(_mlp_with(lambda h: h), freeze="fc2.bias"))
    assert d.constants == ("fc2.bias",)


def test_trainable_names_exactly_the_parameters():
    f = _mlp_with(lambda h: Call("mul", (h, Constant(np.float32(0.5), "half"))))
    d = declarations(declare(f, trainable=["fc2", "half"]))
    assert d.parameters == ("half", "fc2.weight", "fc2.bias")
    assert d["fc1.weight"].reason == "not listed in trainable="
    assert d["half"].reason == "listed in trainable="


def test_declarations_survive_a_rewrite_of_the_body():
    f = declare(_mlp_with(lambda h: h), freeze=["fc1"])
    g = mb.graph.ExprMutator().visit_function(f)
    assert declarations(g).constants == ("fc1.weight", "fc1.bias")


def test_freeze_of_an_unknown_name_says_what_exists():
    with pytest.raises(GraphError, match=r"'fc9' is neither a weight nor a call .*Instead: "
                                         r"name one of its weights \(fc1.weight"):
        declare(_mlp_with(lambda h: h), freeze=["fc9"])


def test_trainable_integer_weight_is_refused():
    x = Var("x", TensorType((2, 4), "float32"))
    g = Function([x], Call("gather", (x, Constant(np.array([0, 1], np.int64), "idx")),
                           Attrs(axis=1)))
    with pytest.raises(GraphError, match="'idx' is int64; only float tensors train. Instead"):
        declare(g, trainable=["idx"])


def test_an_unknown_role_is_refused():
    with pytest.raises(GraphError, match="role 'weights' is not one of parameter, buffer"):
        Declared("w", "weights", "")


def test_the_table_names_each_weight_its_role_type_and_reason():
    f = _mlp_with(lambda h: Call("mul", (h, Constant(np.float32(0.5), "half"))))
    text = repr(declarations(f))
    assert text.splitlines()[0] == "main: 4 parameters, 0 buffers, 1 constants"
    row = next(r for r in text.splitlines() if r.split()[0] == "half")
    assert row.split()[1] == "constant" and row.endswith("a 0-d scalar")


def test_declarations_of_a_non_function_is_refused():
    with pytest.raises(GraphError, match="declarations takes a graph Function, got int"):
        declarations(3)


def test_eval_form_uses_running_statistics_and_drops_no_element():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 4)).astype("float32")
    f = eval_form(_bn("batch_norm_train"))
    w = {n: c.data.astype(np.float64) for n, c in f.weights.items()}
    c = (None, slice(None), None, None)
    want = (x - w["bn.mean"][c]) / np.sqrt(w["bn.var"][c] + 1e-5) * w["bn.scale"][c] \
        + w["bn.bias"][c]
    np.testing.assert_allclose(mb.graph.interpret(f, x), want, rtol=1e-5, atol=1e-5)
    v = Var("v", TensorType((2, 4), "float32"))
    g = eval_form(Function([v], Call("relu", (Call("dropout", (v, Constant(np.int64(0), "c")),
                                                   Attrs(ratio=0.9)),))))
    xv = np.ones((2, 4), "float32")
    np.testing.assert_array_equal(mb.graph.interpret(g, xv), xv)


def test_a_layer_name_stands_for_its_parameters_not_its_buffers():
    f = _bn("batch_norm_train")
    assert declarations(declare(f, freeze=["bn"])).buffers == ("bn.mean", "bn.var")
    d = declarations(declare(f, trainable=["bn"]))
    assert d.parameters == ("bn.scale", "bn.bias") and d.buffers == ("bn.mean", "bn.var")


def test_freezing_a_buffer_by_name_stops_its_updates():
    d = declarations(declare(_bn("batch_norm_train"), freeze=["bn.var"]))
    assert d["bn.var"] == Declared("bn.var", CONSTANT, "frozen (was a buffer)")
    assert d.buffers == ("bn.mean",)
