import logging
import pickle
import threading

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, ArtifactError, DynamicShapeError
from mlcbook.frontend import examples
from mlcbook.graph import (BatchExecutable, Constant, Function, IRModule, SymbolicBatchModule,
                           TensorType, Var, op)
from mlcbook.graph.compile import kernel_calls

W = np.random.default_rng(0).standard_normal((4, 3)).astype("float32")


def symbolic_mlp(built: list | None = None) -> SymbolicBatchModule:
    """relu(x @ W + b) for x of shape (N, 4) and b of shape (3,); ``built`` records the
    batch sizes the module is rebuilt for."""
    def rebuild(n: int) -> IRModule:
        if built is not None:
            built.append(n)
        x, b = Var("x", TensorType((n, 4))), Var("b", TensorType((3,)))
        y = op.relu(op.add(op.matmul(x, Constant(W, name="w")), b))
        return IRModule({"main": Function([x, b], y, "main")})
    return SymbolicBatchModule(rebuild(1).functions, "N", ("x",), rebuild)


def reference(x, b):
    return np.maximum(x @ W + b, 0)


@pytest.fixture(scope="module")
def compiled():
    built = []
    return mb.compile(symbolic_mlp(built)), built


def test_compile_builds_nothing_until_a_call():
    built = []
    exe = mb.compile(symbolic_mlp(built))
    assert isinstance(exe, BatchExecutable)
    assert exe.batch_sizes == [] and built == [1]     # batch 1: the module shown at import
    assert repr(exe) == "<BatchExecutable (x: (N, 4) float32, b: Tensor((3,), \"float32\")): " \
        "compiled for batch sizes none yet>"


def test_each_batch_size_is_compiled_once_and_kept(compiled):
    exe, built = compiled
    b = np.linspace(-1, 1, 3, dtype="float32")
    rng = np.random.default_rng(1)
    for n in (3, 5, 3, 5):
        x = rng.standard_normal((n, 4)).astype("float32")
        np.testing.assert_allclose(exe(x, b), reference(x, b), rtol=1e-5, atol=1e-6)
    assert built[1:] == [3, 5] and exe.batch_sizes == [3, 5]
    assert exe.stats["batch_sizes"] == [3, 5] and exe.stats["batch_dim"] == "N"
    assert exe.stats["by_batch_size"][5]["kernels"] >= 1
    assert repr(exe).endswith("compiled for batch sizes 3, 5>")


def test_the_first_call_of_a_size_logs_a_line(caplog):
    exe = mb.compile(symbolic_mlp())
    x, b = np.ones((2, 4), "float32"), np.zeros(3, "float32")
    with caplog.at_level(logging.WARNING, logger="mlcbook.graph.batch"):
        exe(x, b)
        exe(x, b)
    assert [r.getMessage() for r in caplog.records] == [
        "compiling the model for batch size N = 2 (the first use of this size; later calls "
        "reuse it)"]


def test_run_by_name_and_profile_use_the_batch_of_their_inputs(compiled):
    exe, _ = compiled
    x, b = np.ones((3, 4), "float32"), np.ones(3, "float32")
    np.testing.assert_allclose(exe.run({"x": x, "b": b}), reference(x, b), rtol=1e-5)
    np.testing.assert_allclose(exe(b=b, x=x), reference(x, b), rtol=1e-5)
    assert [k for k, _ in exe.profile(x, b, repeat=2)] == \
        [k for k, _ in exe.specialize(3).plan.steps]


@pytest.mark.parametrize("call,msg", [
    (lambda e: e(np.float32(1), np.ones(3, "float32")), "input 'x' is a scalar"),
    (lambda e: e(b=np.ones(3, "float32")), "missing input 'x': its first axis sets the batch"),
    (lambda e: e(np.ones((0, 4), "float32"), np.ones(3, "float32")),
     "the batch size 'N' must be a positive integer, got 0"),
    (lambda e: e.run([np.ones((2, 4), "float32")]), "takes a dict"),
    (lambda e: e.specialize(-1), "the batch size 'N' must be a positive integer, got -1"),
])
def test_bad_inputs_are_errors(compiled, call, msg):
    with pytest.raises(ArgumentError, match=msg):
        call(compiled[0])


def test_inputs_that_disagree_on_the_batch_are_an_error():
    x, y = Var("x", TensorType((1, 2))), Var("y", TensorType((1, 2)))
    mod = SymbolicBatchModule(IRModule({"main": Function([x, y], op.add(x, y))}).functions,
                              "N", ("x", "y"), lambda n: None)
    with pytest.raises(ArgumentError, match=r"the inputs disagree on the batch size 'N' \(their "
                       r"first axis\): 'x' has 2, 'y' has 3"):
        mb.compile(mod)(np.ones((2, 2), "float32"), np.ones((3, 2), "float32"))


def test_save_and_export_ask_for_a_batch_size(compiled, tmp_path):
    exe, _ = compiled
    with pytest.raises(DynamicShapeError, match=r"\[MLC-G010\] this executable has the "
                       r"symbolic batch size 'N', and a saved model has static shapes. "
                       r"Instead: pick a batch size \(compiled so far: 3, 5\), e.g. "
                       r"exe.specialize\(8\).save"):
        exe.save(tmp_path / "m.mlcb")
    with pytest.raises(DynamicShapeError, match=r"an exported model has static shapes.*"
                       r"exe.specialize\(8\).export\("):
        exe.export(tmp_path / "lib")
    assert not (tmp_path / "m.mlcb").exists() and not (tmp_path / "lib").exists()
    with pytest.raises(ArtifactError, match="cannot be pickled"):
        pickle.dumps(exe)


def test_a_specialization_saves_and_loads(compiled, tmp_path):
    exe, _ = compiled
    path = exe.specialize(3).save(tmp_path / "m3.mlcb")
    x, b = np.full((3, 4), 0.5, "float32"), np.ones(3, "float32")
    np.testing.assert_array_equal(mb.load(path)(x, b), exe(x, b))


def test_threads_meeting_a_new_size_compile_it_once():
    built = []
    exe = mb.compile(symbolic_mlp(built))
    x, b = np.ones((4, 4), "float32"), np.ones(3, "float32")
    out = [None] * 3
    threads = [threading.Thread(target=lambda k=k: out.__setitem__(k, exe(x, b)))
               for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == [1, 4]
    for y in out:
        np.testing.assert_allclose(y, reference(x, b), rtol=1e-5)


def test_dump_dir_gets_a_folder_per_batch_size(tmp_path):
    exe = mb.compile(symbolic_mlp(), opt_level=1, dump_dir=tmp_path)
    exe(np.ones((2, 4), "float32"), np.ones(3, "float32"))
    assert [p.name for p in tmp_path.iterdir()] == ["batch_2"]
    assert any((tmp_path / "batch_2").iterdir())


def test_a_module_without_rebuild_is_an_error():
    with pytest.raises(ArgumentError, match="needs rebuild, a function from a batch size"):
        SymbolicBatchModule(symbolic_mlp().functions, "N", ("x",))


def test_kernel_calls_ask_for_a_batch_size():
    with pytest.raises(DynamicShapeError, match="symbolic batch size 'N'.*mod.specialize"):
        kernel_calls(symbolic_mlp())


def test_inputs_name_the_batch_axis_like_onnxruntime():
    exe = mb.compile(symbolic_mlp())
    assert [(t.name, t.shape, t.dtype) for t in exe.inputs] == \
        [("x", ("N", 4), "float32"), ("b", (3,), "float32")]
    assert exe.batch_sizes == []     # reading the signature compiles nothing


def test_outputs_name_the_axes_that_follow_the_batch():
    built = []
    exe = mb.compile(symbolic_mlp(built))
    assert [(t.name, t.shape, t.dtype) for t in exe.outputs] == [("output_0", ("N", 3),
                                                                   "float32")]
    assert exe.output_names == ["output_0"] and exe.batch_sizes == []
    assert built == [1, 2]            # imported at batch 2 once, to see which axes follow it
    exe.outputs
    assert built == [1, 2]


def test_outputs_keep_the_onnx_names_and_match_a_specialization():
    exe = mb.compile(mb.from_onnx(examples.mlp(batch=None)))
    assert [(t.name, t.shape) for t in exe.outputs] == [("fc3", ("N", 10))]
    at_3 = exe.specialize(3)
    assert [(t.name, t.shape) for t in at_3.outputs] == [("fc3", (3, 10))]
    assert [t.shape for t in at_3.inputs] == [(3, 784)] and exe.inputs[0].shape == ("N", 784)


def test_a_symbolic_shape_has_no_size_in_bytes():
    exe = mb.compile(symbolic_mlp())
    with pytest.raises(DynamicShapeError, match=r"'x' has the shape \('N', 4\).*symbolic.*"
                                                r"Instead: .*specialize\(n\)"):
        exe.inputs[0].nbytes
