import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, BuildError
from mlcbook.graph import Constant, Function, TensorType, Tuple, Var, interpret, op


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((4, 12)))
    w = Constant(rng.standard_normal((12, 8)).astype("float32"), name="w")
    h = op.relu(op.matmul(x, w, name="fc"))
    h = op.reshape(h, shape=(4, 2, 4))
    f = Function([x], Tuple([op.softmax(h), op.sum(h, axes=(2,), keepdims=0)]))
    return f, mb.compile(f)


def test_compiled_model_matches_the_reference(model):
    f, exe = model
    x = np.random.default_rng(1).standard_normal((4, 12)).astype("float32")
    for got, want in zip(exe(x), interpret(f, x)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_run_by_name_and_repeated_runs_do_not_share_outputs(model):
    _, exe = model
    a = exe.run({"x": np.ones((4, 12), "float32")})[1]
    b = exe.run({"x": np.zeros((4, 12), "float32")})[1]
    assert not np.array_equal(a, b)


def test_reshape_is_a_view_not_a_kernel(model):
    _, exe = model
    assert "reshape" not in exe.kernels
    assert exe.stats["calls"] == len(exe.plan.steps)


@pytest.mark.parametrize("call,msg", [
    (lambda e: e(np.ones((4, 11), "float32")), r"expects shape \(4, 12\)"),
    (lambda e: e(np.ones((4, 12), "int32")), "expects dtype float32"),
    (lambda e: e.run({"y": np.ones((4, 12), "float32")}), "no input named 'y'"),
    (lambda e: e(), "missing input"),
    (lambda e: e.run(np.ones((4, 12), "float32")), "takes a dict"),
])
def test_inputs_are_checked(model, call, msg):
    with pytest.raises(ArgumentError, match=msg):
        call(model[1])


def test_save_and_load_run_without_recompiling(model, tmp_path):
    _, exe = model
    path = exe.save(tmp_path / "m.mlcb")
    loaded = mb.load(path)
    x = np.random.default_rng(2).standard_normal((4, 12)).astype("float32")
    for a, b in zip(loaded(x), exe(x)):
        np.testing.assert_array_equal(a, b)


def test_loading_something_else_is_an_error(tmp_path):
    bad = tmp_path / "bad.mlcb"
    bad.write_bytes(b"not a zip")
    with pytest.raises(BuildError, match="not an mlcbook compiled model"):
        mb.load(bad)
    with pytest.raises(BuildError, match="no compiled model"):
        mb.load(tmp_path / "missing.mlcb")


def test_model_returning_an_input_and_a_constant():
    x = Var("x", TensorType((3,)))
    f = Function([x], Tuple([x, Constant(np.arange(2, dtype="int64"))]))
    a, b = mb.compile(f)(np.ones(3, "float32"))
    assert a.tolist() == [1, 1, 1] and b.tolist() == [0, 1]


@pytest.mark.parametrize("dtype", ["bfloat16", "uint64"])
def test_saved_executable_keeps_bfloat16_and_uint64_weights_and_outputs(dtype, tmp_path):
    x = Var("x", TensorType((4,), dtype))
    w = Constant(np.array([1, 2, 3, 2**40]).astype(dtype))
    exe = mb.compile(Function([x], op.add(x, w)))
    a = np.array([5, 6, 7, 8]).astype(dtype)
    loaded = mb.load(exe.save(tmp_path / "m.mlc"))
    got = loaded(a)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got.view(np.uint8), (a + w.data).view(np.uint8))


def test_one_executable_called_from_four_threads_agrees_exactly():
    # each call's input differs, so a call that read or returned another thread's
    # intermediates would give a different answer than the same call alone
    import threading
    x = Var("x", TensorType((2, 8)))
    w = Constant(np.random.default_rng(3).standard_normal((8, 8)).astype("float32"))
    exe = mb.compile(Function([x], op.sum(op.relu(op.matmul(x, w)), axes=(1,), keepdims=0)))
    inputs = np.random.default_rng(4).standard_normal((64, 2, 8)).astype("float32")
    want = [exe(a) for a in inputs]
    wrong = []

    def worker(seed: int):
        for k in range(2500):
            i = (seed * 7 + k) % len(inputs)
            if not np.array_equal(exe(inputs[i]), want[i]):
                wrong.append(i)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_big_endian_inputs_give_the_same_answer(model):
    _, exe = model
    x = np.random.default_rng(6).standard_normal((4, 12)).astype("float32")
    for a, b in zip(exe(x.astype(">f4")), exe(x)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("data_shape,axis", [((5, 3), 0), ((5, 3), 1), ((5,), 0)])
def test_gather_with_a_scalar_index_compiles(data_shape, axis):
    data = Var("data", TensorType(data_shape))
    idx = Var("idx", TensorType((), "int64"))
    f = Function([data, idx], op.gather(data, idx, axis=axis))
    d = np.arange(np.prod(data_shape), dtype="float32").reshape(data_shape)
    for i in (0, 2, -1):
        want = interpret(f, d, np.array(i, "int64"))
        np.testing.assert_array_equal(mb.compile(f)(d, np.array(i, "int64")), want)


def test_gather_out_of_range_raises_in_the_reference_and_compiled_alike(tmp_path):
    data = Var("data", TensorType((5, 3)))
    idx = Var("idx", TensorType((2,), "int64"))
    f = Function([data, idx], op.relu(op.gather(data, op.relu(idx), axis=0)))
    exe = mb.compile(f)
    loaded = mb.load(exe.save(tmp_path / "g.mlcb"))
    d = np.ones((5, 3), "float32")
    ok = np.array([4, 0], "int64")
    np.testing.assert_array_equal(exe(d, ok), interpret(f, d, ok))
    for bad in ([5, 0], [2**40, 1]):          # 2**40 would wrap to 0 as an int32
        for run in (lambda *a: interpret(f, *a), exe, loaded):
            with pytest.raises(ArgumentError, match=r"gather: an index is outside \[-5, 4\]"):
                run(d, np.array(bad, "int64"))


def test_a_tensor_beyond_int32_indexing_is_refused_by_name():
    from mlcbook.errors import LegalizeError
    x = Var("image", TensorType((3_000_000, 1, 28, 28)))
    with pytest.raises(LegalizeError, match=r"input 'image' has shape .* more than the "
                       r"2147483647 .* smaller batch size"):
        mb.compile(Function([x], op.relu(x)))


def test_intermediates_beyond_memory_are_a_clear_error():
    # four 1 GiB intermediates under a 3 GiB address-space limit: np.empty fails
    import subprocess
    import sys
    code = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
import mlcbook as mb
from mlcbook.graph import Function, TensorType, Var, op
x = Var("x", TensorType((2**28,)))
y = op.exp(op.relu(op.sigmoid(op.tanh(x))))
try:
    mb.compile(Function([x], y), opt_level=0)  # no fusion: four intermediates of 1 GiB
except mb.errors.MLCError as e:
    print(e)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "[MLC-A001] the model's intermediate buffers need 4.0 GiB" in proc.stdout


@pytest.mark.parametrize("make", [
    lambda x: np.asfortranarray(x),                      # not C-contiguous
    lambda x: np.repeat(x, 2, axis=1)[:, ::2],           # a strided view
    lambda x: x.astype(">f4"),                           # another byte order
])
def test_inputs_a_run_cannot_use_as_they_are_are_converted_first(model, make):
    _, exe = model
    x = np.random.default_rng(7).standard_normal((4, 12)).astype("float32")
    for a, b in zip(exe(make(x)), exe(x)):
        np.testing.assert_array_equal(a, b)


def test_a_run_reads_each_call_s_own_input_not_the_last_one_s(model):
    _, exe = model
    rng = np.random.default_rng(8)
    xs = [rng.standard_normal((4, 12)).astype("float32") for _ in range(3)]
    got = [exe(x)[1] for x in xs]
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(exe.run({"x": x})[1], g)
    assert not np.array_equal(got[0], got[1])


def _parallel_model():
    # big enough that the default schedule runs its matmul and its ReLU in parallel
    x = Var("x", TensorType((64, 256)))
    w = Constant(np.random.default_rng(9).standard_normal((256, 256)).astype("float32"))
    f = Function([x], op.relu(op.matmul(x, w)))
    exe = mb.compile(f)
    assert any("T.parallel" in str(k.lowered) for k in exe.kernels.values())
    return f, exe


def test_runs_agree_whatever_the_thread_count_between_them():
    f, exe = _parallel_model()
    x = np.random.default_rng(10).standard_normal((64, 256)).astype("float32")
    want = exe(x)
    np.testing.assert_allclose(want, interpret(f, x), rtol=1e-4, atol=1e-4)
    for threads in [2, 1, 3, 2, 1]:
        with mb.runtime.num_threads(threads):
            np.testing.assert_array_equal(exe(x), want)


def test_two_executables_with_parallel_loops_run_from_two_threads_at_once():
    import threading
    runs = [_parallel_model()[1] for _ in range(2)]
    x = np.random.default_rng(11).standard_normal((64, 256)).astype("float32")
    wants = [e(x) for e in runs]
    wrong = []

    def worker(k: int):
        for _ in range(100):
            if not np.array_equal(runs[k](x), wants[k]):
                wrong.append(k)

    with mb.runtime.num_threads(2):
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert wrong == []


def test_a_run_without_parallel_loops_leaves_the_pool_asleep(model):
    # a run with parallel loops wakes sleeping workers as it starts; one without them
    # must not make them spin for nothing
    import time
    from mlcbook.runtime.native_pool import SPIN_SECONDS, native_pool
    from ...runtime._pool import all_asleep
    _, exe = model
    assert not any("T.parallel" in str(k.lowered) for k in exe.kernels.values())
    pool = native_pool()
    with mb.runtime.num_threads(2):
        _parallel_model()[1](np.zeros((64, 256), "float32"))
        asleep = all_asleep(pool)
        assert pool.workers and asleep, f"{pool.sleeping} of {pool.workers} asleep"
        exe(np.zeros((4, 12), "float32"))
        watched = time.perf_counter() + 25 * SPIN_SECONDS   # a roused worker shows within
        while time.perf_counter() < watched:
            assert pool.sleeping == pool.workers, "the run woke the pool"


def test_big_constants_sit_on_huge_page_boundaries_and_keep_their_values():
    # where 4 KiB pages land decides cache conflicts per process; one block of huge pages
    # lays the weights out the same way every time
    from mlcbook.runtime.pages import HUGE_PAGE
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((1024, 512)).astype("float32")       # 2 MiB
    w2 = rng.standard_normal((512, 10)).astype("float32")
    x = Var("x", TensorType((4, 1024)))
    f = Function([x], op.matmul(op.relu(op.matmul(x, Constant(w1, "w1"))), Constant(w2, "w2")))
    exe = mb.compile(f, opt_level=1)
    consts = exe.constants
    assert min(a.ctypes.data for a in consts.values()) % HUGE_PAGE == 0
    xv = rng.standard_normal((4, 1024)).astype("float32")
    np.testing.assert_allclose(exe(xv), np.maximum(xv @ w1, 0) @ w2, rtol=1e-4, atol=1e-3)


def test_a_run_makes_every_kernel_call_in_one_native_call(model, monkeypatch):
    f, exe = model
    x = np.random.default_rng(2).standard_normal((4, 12)).astype("float32")
    want = exe(x)
    assert exe._runner is not None and callable(exe._runner)

    def one_by_one(*args):
        raise AssertionError("the run called its kernels one by one from Python")
    monkeypatch.setattr(type(exe), "_run_each", one_by_one)
    for got, w in zip(exe(x), want):
        np.testing.assert_array_equal(got, w)


def test_a_plan_with_index_checks_calls_its_kernels_from_python_and_checks_them():
    data = Var("data", TensorType((5, 3)))
    idx = Var("idx", TensorType((2,), "int64"))
    exe = mb.compile(Function([data, idx], op.relu(op.gather(data, idx, axis=0))))
    assert exe._runner is None
    d = np.arange(15, dtype="float32").reshape(5, 3) - 7
    np.testing.assert_array_equal(exe(d, np.array([4, 0])), np.maximum(d[[4, 0]], 0))
    with pytest.raises(ArgumentError, match="outside"):
        exe(d, np.array([5, 0]))
