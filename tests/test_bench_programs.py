"""The programs bench/ times still build and compute what numpy does (at small sizes)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import mlcbook as mb

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import _programs as P  # noqa: E402

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("program", [P.matmul_ch4, P.matmul_best])
def test_matmul_programs_match_numpy(program):
    a, b = RNG.standard_normal((2, 128, 128)).astype("float32")
    np.testing.assert_allclose(mb.build(program(128))(a, b), a @ b, rtol=1e-4, atol=1e-3)


def test_bf16_matmul_program_widens_its_inputs_and_sums_in_float32():
    a, b = RNG.standard_normal((2, 64, 64)).astype("bfloat16")
    want = a.astype("float64") @ b.astype("float64")
    got = mb.build(P.matmul_best(64, in_dtype="bfloat16"))(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv2d_program_matches_a_direct_convolution():
    x = RNG.standard_normal((1, 4, 6, 6)).astype("float32")
    w = RNG.standard_normal((8, 4, 3, 3)).astype("float32")
    xp = np.pad(x[0], [(0, 0), (1, 1), (1, 1)])
    want = np.einsum("cyxkl,fckl->fyx", np.lib.stride_tricks.sliding_window_view(
        xp, (3, 3), axis=(1, 2)), w)[None]
    got = mb.build(P.conv2d_best(c=4, f=8, h=6, w=6, xr=2))(x, w)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def _one_conv(c, k, h, kern, groups):
    import convs
    x = RNG.standard_normal((1, c, h, h)).astype("float32")
    w = (RNG.standard_normal((k, c // groups, kern, kern)) * 0.1).astype("float32")
    p = kern // 2
    func = convs._graph(x.shape, w, {"pads": (p,) * 4, "strides": (1, 1),
                                     "kernel_shape": (kern, kern), "group": groups})
    return func, x, mb.graph.interpret(func, x)


def test_convs_times_the_blocked_kernel_mb_compile_makes_for_a_grouped_conv():
    import convs
    func, x, want = _one_conv(48, 48, 6, 3, 4)     # 12 channels a group: padded blocks
    run, steps = convs._compiled(func, x, want)   # checks the whole plan against want
    names = [name for name, _ in steps]
    # the input is read as it is (NCHW1c: a view, no kernel), the output blocked per group
    assert names == ["conv_nchwc", "from_blocked"]
    run()                                          # the conv kernel alone
    assert convs._choice(steps, 48, 4).startswith("direct, NCHW")


def test_convs_says_a_padded_grouped_pointwise_conv_is_a_batched_matmul():
    import convs
    func, x, want = _one_conv(48, 48, 6, 1, 4)     # 1x1, 12 channels a group
    run, steps = convs._compiled(func, x, want)
    assert [name for name, _ in steps] == ["matmul"]
    run()
    assert convs._choice(steps, 48, 4) == "batched matmul, NCHW (4 groups)"


def test_convs_says_a_depthwise_conv_stays_in_nchw():
    import convs
    func, x, want = _one_conv(8, 8, 6, 3, 8)
    _, steps = convs._compiled(func, x, want)
    assert convs._choice(steps, 8, 8) == "NCHW (depthwise stays NCHW)"


def test_depthwise_benchmark_model_runs_its_depthwise_convs_in_blocks_and_matches_nchw():
    import depthwise
    f = depthwise.model()
    x = RNG.standard_normal((1, 32, 56, 56)).astype("float32")
    blocked = mb.compile(f)
    with depthwise.depthwise_in_nchw():
        nchw = mb.compile(f)
    assert sum("depthwise_nchwc" in k for k in blocked.kernels) == len(depthwise.BLOCKS)
    assert not any("depthwise_nchwc" in k for k in nchw.kernels)
    np.testing.assert_allclose(blocked(x), nchw(x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(blocked(x), mb.graph.interpret(f, x), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_the_jax_twin_of_a_training_step_steps_as_mlcbook_does(kind):
    pytest.importorskip("jax")
    import jax.numpy as jnp
    import train
    model = mb.train.mlp((12, 16, 5), batch=8) if kind == "mlp" else mb.train.cnn(batch=4)
    trainer = mb.train.compile_step(model, "cross_entropy",
                                    mb.train.SGD(lr=train.LR, momentum=train.MOMENTUM))
    x = RNG.standard_normal(model.params[0].shape).astype("float32")
    y = RNG.integers(0, model.ret_type.shape[-1], len(x))
    p = {n: jnp.asarray(v) for n, v in trainer.params.items()}
    b = {n: jnp.zeros_like(v) for n, v in p.items()}
    step = train.jax_step(kind, list(p))
    for _ in range(3):
        p, b, loss = step(p, b, jnp.asarray(x), jnp.asarray(y), jnp.float32(train.LR))
        assert float(loss) == pytest.approx(trainer.step(x, y), rel=1e-5)


def test_the_training_benchmark_leaves_jax_out_with_a_note_when_it_is_missing(monkeypatch):
    import train
    monkeypatch.setitem(sys.modules, "jax", None)     # import jax now raises ImportError
    assert "jax is not installed" in train.jax_missing()
