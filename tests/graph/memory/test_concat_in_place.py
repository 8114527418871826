"""A concat whose slices are contiguous costs no copy: its inputs' producers write straight
into their slice of its output (mlcbook.graph.memory.memory_plan.elide_concats)."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph.compile import kernel_calls
from mlcbook.graph.memory.memory_plan import elide_concats, plan_memory
from mlcbook.graph.memory.plan import Plan, Slot
from mlcbook.ops.types import TensorType

from .._models import inception_module, inputs


def _spans(exe):
    plan = exe.plan
    return {i: (off, off + plan.slots[i].nbytes) for i, off in plan.offsets.items()}


@pytest.mark.parametrize("opt_level", [2, 3])
def test_branches_write_into_their_slice_and_the_concat_step_is_gone(opt_level):
    f = inception_module(1)
    exe = mb.compile(f, opt_level=opt_level)
    assert not any(k.startswith("concat") for k, _ in exe.plan.steps)
    assert not any(k.startswith("concat") for k in exe.kernels)   # not even built
    # the branch outputs, read by no step, lie end to end in the slot the consumer reads
    spans = _spans(exe)
    read = {a for _, args in exe.plan.steps for a in args[:-1]}
    branches = sorted(spans[args[-1]] for _, args in exe.plan.steps[:-1]
                      if args[-1] not in read)
    assert len(branches) == 3
    assert all(p[1] == q[0] for p, q in zip(branches, branches[1:]))
    whole = (branches[0][0], branches[-1][1])
    assert any(spans.get(a) == whole for a in read)
    x, = inputs(f)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-5)


def test_concat_in_place_off_keeps_the_copying_concat():
    f = inception_module(1)
    exe = mb.compile(f, options={"concat_in_place": False})
    assert any(k.startswith("concat") for k, _ in exe.plan.steps)
    x, = inputs(f)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-5)


def test_a_saved_executable_keeps_its_branches_in_their_slices(tmp_path):
    f = inception_module(1)
    exe = mb.compile(f)
    back = mb.load(exe.save(tmp_path / "m.mlcb"))   # the loader checks the plan's offsets
    assert back.plan.offsets == exe.plan.offsets
    x, = inputs(f, seed=1)
    np.testing.assert_array_equal(back(x), exe(x))


def test_a_concat_that_costs_no_copy_is_no_tuning_task():
    names = [name for name, _, _ in kernel_calls(inception_module(1))]
    assert names and not any(n.startswith("concat") for n in names)
    names = [name for name, _, _ in kernel_calls(inception_module(2))]
    assert any(n.startswith("concat") for n in names)


def test_a_concat_of_a_batch_of_two_is_still_copied():
    # the slices of (2, C, H, W) along C are not contiguous
    f = inception_module(2)
    exe = mb.compile(f)
    assert any(k.startswith("concat") for k, _ in exe.plan.steps)
    x, = inputs(f)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-5)


def test_a_slice_not_64_byte_aligned_is_still_copied():
    # NCHW (opt_level 2) with 3 x 6 x 6 floats = 432 bytes before the second slice
    f = inception_module(1, channels=(3, 16, 16))
    exe = mb.compile(f, opt_level=2)
    assert any(k.startswith("concat") for k, _ in exe.plan.steps)
    x, = inputs(f)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-5)


def _plan(slots, steps, outputs):
    return Plan([("x", TensorType((1, 16)))], [Slot(*s) for s in slots], steps, outputs, False)


T = "temp"


def test_elide_concats_places_each_input_at_its_slice_of_the_output():
    # x -> a, x -> b, concat(a, b) -> c, c -> d
    plan = _plan([((1, 16), "float32", "input", 0), ((1, 16), "float32", T),
                  ((1, 16), "float32", T), ((1, 32), "float32", T), ((1, 32), "float32", T)],
                 [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3]), ("fd", [3, 4])], [4])
    plan.checks = [(3, 0, 5, 0, -1)]
    new, kept, parts = elide_concats(plan, {2: 1})
    assert [k for k, _ in new.steps] == ["fa", "fb", "fd"] and kept == [0, 1, 3]
    assert parts == {1: (3, 0), 2: (3, 64)}
    assert new.checks == [(2, 0, 5, 0, -1)]   # the check follows its step
    mp = plan_memory(new, parts=parts)
    assert mp.offsets[1] == mp.offsets[3] and mp.offsets[2] == mp.offsets[3] + 64
    # c is live while d is written: d goes elsewhere
    assert mp.offsets[4] >= mp.offsets[3] + 128 or mp.offsets[4] + 128 <= mp.offsets[3]


@pytest.mark.parametrize("why,slots,steps", [
    ("an input is a model input",
     [((1, 16), "float32", "input", 0), ((1, 16), "float32", T), ((1, 32), "float32", T)],
     [("fa", [0, 1]), ("cat", [0, 1, 2])]),
    ("slices of a batch of two are not contiguous",
     [((2, 8), "float32", "input", 0), ((2, 8), "float32", T), ((2, 8), "float32", T),
      ((2, 16), "float32", T)],
     [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3])]),
    ("the second slice starts 40 bytes in",
     [((1, 16), "float32", "input", 0), ((1, 10), "float32", T), ((1, 6), "float32", T),
      ((1, 16), "float32", T)],
     [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3])]),
    ("a step reads the output and one of its inputs",
     [((1, 16), "float32", "input", 0), ((1, 16), "float32", T), ((1, 16), "float32", T),
      ((1, 32), "float32", T), ((1, 32), "float32", T)],
     [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3]), ("g", [3, 1, 4])]),
])
def test_elide_concats_keeps_a_concat_whose_inputs_cannot_be_slices(why, slots, steps):
    shape0 = slots[0][0]
    plan = Plan([("x", TensorType(shape0))], [Slot(*s) for s in slots], steps,
                [len(slots) - 1], False)
    k = next(i for i, (n, _) in enumerate(steps) if n == "cat")
    new, kept, parts = elide_concats(plan, {k: 1})
    assert parts == {} and new.steps == plan.steps, why


def test_an_input_concatenated_twice_is_a_slice_of_the_first_concat_only():
    # concat(a, b) -> c and concat(a, b) -> d: a cannot live in both
    plan = _plan([((1, 16), "float32", "input", 0), ((1, 16), "float32", T),
                  ((1, 16), "float32", T), ((1, 32), "float32", T), ((1, 32), "float32", T)],
                 [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3]), ("cat", [1, 2, 4])],
                 [3, 4])
    new, kept, parts = elide_concats(plan, {2: 1, 3: 1})
    assert kept == [0, 1, 3] and parts == {1: (3, 0), 2: (3, 64)}


def test_a_concat_elided_into_another_concat_lies_inside_its_final_owner():
    # cat(a, b) -> c, then cat(c, e) -> g (a DenseNet block): a and b are parts of c, which is
    # a part of g; every part gets its place in g, and only g a place of its own
    plan = _plan([((1, 16), "float32", "input", 0), ((1, 16), "float32", T),
                  ((1, 16), "float32", T), ((1, 32), "float32", T), ((1, 16), "float32", T),
                  ((1, 48), "float32", T), ((1, 48), "float32", T)],
                 [("fa", [0, 1]), ("fb", [0, 2]), ("cat1", [1, 2, 3]), ("fe", [0, 4]),
                  ("cat2", [3, 4, 5]), ("fh", [5, 6])], [6])
    new, kept, parts = elide_concats(plan, {2: 1, 4: 1})
    assert [k for k, _ in new.steps] == ["fa", "fb", "fe", "fh"]
    mp = plan_memory(new, parts=parts)
    g = mp.offsets[5]
    assert (mp.offsets[1], mp.offsets[2], mp.offsets[3], mp.offsets[4]) == (g, g + 64, g, g + 128)
    assert mp.offsets[6] >= g + 192 or mp.offsets[6] + 192 <= g


def _conv_model(outputs: list[str], nodes: list, rng) -> "onnx.ModelProto":
    """An ONNX model over x (1, 16, 6, 6) whose nodes may use weights w1..w6 of 1x1 convs of
    16 channels (:func:`_conv` makes one with its ReLU); ``outputs``: (name, channels)."""
    from onnx import TensorProto, helper, numpy_helper
    inits = []
    for i in range(1, 7):
        w = (rng.standard_normal((16, 16, 1, 1)) * 0.3).astype("float32")
        inits.append(numpy_helper.from_array(w, f"w{i}"))
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, 6, 6]) for n, c in outputs]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 16, 6, 6])], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _conv(i: int, src: str, dst: str) -> list:
    from onnx import helper
    return [helper.make_node("Conv", [src, f"w{i}"], [dst + "_c"]),
            helper.make_node("Relu", [dst + "_c"], [dst])]


def _output_concat_models():
    """Three models whose concat (contiguous at batch 1, so elided) is a model output, and
    later kernels would reuse its bytes if it died at its last reader."""
    from onnx import helper
    cat = helper.make_node
    return {
        # y = cat(a, b) is an output; d and e come after and need arena bytes
        "output": ([("y", 32), ("e", 16)],
                   _conv(1, "x", "a") + _conv(2, "x", "b") + [cat("Concat", ["a", "b"], ["y"],
                   axis=1)] + _conv(3, "x", "d") + _conv(4, "d", "e")),
        # y = cat(cat(a, b), c): the inner concat is an output too, elided into the outer one
        "concat of concats": ([("i", 32), ("y", 48), ("e", 16)],
                              _conv(1, "x", "a") + _conv(2, "x", "b") +
                              [cat("Concat", ["a", "b"], ["i"], axis=1)] + _conv(3, "x", "c") +
                              [cat("Concat", ["i", "c"], ["y"], axis=1)] + _conv(4, "x", "d") +
                              _conv(5, "d", "e")),
        # y is an output and also read by a Sigmoid; later convs come after that reader
        "output also read": ([("y", 32), ("s", 32), ("e", 16)],
                             _conv(1, "x", "a") + _conv(2, "x", "b") +
                             [cat("Concat", ["a", "b"], ["y"], axis=1),
                              cat("Sigmoid", ["y"], ["s"])] + _conv(3, "x", "d") +
                             _conv(4, "d", "e")),
    }


@pytest.mark.parametrize("opt_level", [0, 2, 3])
@pytest.mark.parametrize("case", sorted(_output_concat_models()))
def test_a_concat_that_is_a_model_output_is_not_overwritten(case, opt_level):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(3)
    outputs, nodes = _output_concat_models()[case]
    model = _conv_model(outputs, nodes, rng)
    x = rng.standard_normal((1, 16, 6, 6)).astype("float32")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})
    exe = mb.compile(mb.from_onnx(model), opt_level=opt_level)
    got = exe(x)
    for name, g, w in zip([n for n, _ in outputs], got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{case}: {name}")


def test_an_elided_concat_that_is_an_output_lives_to_the_end_of_the_plan():
    # x -> a, x -> b, cat(a, b) -> c (an output), x -> d: d must not take c's bytes
    plan = _plan([((1, 16), "float32", "input", 0), ((1, 16), "float32", T),
                  ((1, 16), "float32", T), ((1, 32), "float32", T), ((1, 32), "float32", T)],
                 [("fa", [0, 1]), ("fb", [0, 2]), ("cat", [1, 2, 3]), ("fd", [0, 4])], [3, 4])
    new, _, parts = elide_concats(plan, {2: 1})
    mp = plan_memory(new, parts=parts)
    assert mp.lifetimes[3] == (0, len(new.steps))
    c, d = mp.offsets[3], mp.offsets[4]
    assert d >= c + 128 or d + 128 <= c
