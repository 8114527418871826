"""The three Winograd ops, declared from their te computes: numpy oracles (the transforms as
``einsum`` over the matrices) compose to the direct convolution, and so do the ops'
references; their compiled kernels (default schedules) match the oracles; bad shapes are
named."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import MLCError
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.ops import TensorType as T
from mlcbook.ops import get, legalize_call
from mlcbook.ops.layout import blocked, blocked_weight
from mlcbook.te.ops.winograd import ALPHA, AT, BT, M, R, tiles, winograd_weight

rng = np.random.default_rng(0)


def input_oracle(x, pads):
    pt, pl, pb, pr = pads
    n, cb, h, w, c = x.shape
    th, tw = tiles(h + pt + pb - R + 1), tiles(w + pl + pr - R + 1)
    rows, cols = M * th + ALPHA - M, M * tw + ALPHA - M
    xp = np.zeros((n, cb, rows, cols, c), x.dtype)   # the tiles cover pt + h + pb rows or more
    xp[:, :, pt:pt + h, pl:pl + w] = x
    d = np.stack([np.stack([xp[:, :, i:i + M * th:M, j:j + M * tw:M] for j in range(ALPHA)], -1)
                  for i in range(ALPHA)], -2)                      # (n, cb, th, tw, c, 4, 4)
    v = np.einsum("ei,fj,nbyxcij->efnbyxc", BT, BT, d.astype(np.float64))
    return v.reshape(ALPHA * ALPHA, *v.shape[2:]).astype(x.dtype)


def product_oracle(v, u):
    return np.einsum("pnbyxc,pkbco->pnkyxo", v, u)


def output_oracle(m, out_hw):
    _, n, kb, th, tw, k = m.shape
    y = np.einsum("ye,xf,efnbstk->nbsytxk", AT, AT,
                  m.reshape(ALPHA, ALPHA, n, kb, th, tw, k).astype(np.float64))
    y = y.reshape(n, kb, M * th, M * tw, k)
    return np.ascontiguousarray(y[:, :, :out_hw[0], :out_hw[1]]).astype(m.dtype)


def _conv_case(c, k, h, w, pads, cb=8, kb=8):
    x = rng.standard_normal((1, c, h, w)).astype("float32")
    wt = rng.standard_normal((k, c, 3, 3)).astype("float32")
    direct = get("conv").reference(x, wt, pads=pads)
    return blocked(x, cb), blocked_weight(wt, cb, kb), blocked(direct, kb)


def _references(xb, wb, pads, out_hw):
    v = get("winograd_input").reference(xb, pads=pads)
    m = get("winograd_product").reference(v, winograd_weight(wb))
    return get("winograd_output").reference(m, out_hw=out_hw)


def _oracles(xb, wb, pads, out_hw):
    return output_oracle(product_oracle(input_oracle(xb, pads), winograd_weight(wb)), out_hw)


@pytest.mark.parametrize("compose", [_oracles, _references])
@pytest.mark.parametrize("h,w,pads", [(6, 6, (1, 1, 1, 1)), (7, 5, (1, 1, 1, 1)),
                                      (6, 9, (0, 2, 1, 0)), (4, 4, (0, 0, 0, 0))])
def test_the_transforms_compose_to_the_direct_convolution(compose, h, w, pads):
    xb, wb, want = _conv_case(16, 8, h, w, pads)
    np.testing.assert_allclose(compose(xb, wb, pads, want.shape[2:4]), want,
                               rtol=1e-4, atol=1e-4)


def _run(op, arrays, attrs):
    func = default_schedule(legalize_call(op, [T(a.shape) for a in arrays], attrs))
    out = np.zeros(func.outputs[0].shape, "float32")
    mb.build(func)(*arrays, out)
    return out


@pytest.mark.parametrize("h,w,pads", [(8, 8, (1, 1, 1, 1)), (7, 9, (1, 1, 1, 1)),
                                      (6, 5, (2, 0, 0, 1))])
def test_compiled_kernels_match_the_oracles(h, w, pads):
    xb, wb, want = _conv_case(16, 16, h, w, pads)
    v = _run("winograd_input", [xb], {"pads": pads})
    np.testing.assert_allclose(v, input_oracle(xb, pads), rtol=1e-5, atol=1e-5)
    m = _run("winograd_product", [v, winograd_weight(wb)], {})
    np.testing.assert_allclose(m, product_oracle(v, winograd_weight(wb)), rtol=1e-4, atol=1e-4)
    y = _run("winograd_output", [m], {"out_hw": want.shape[2:4]})
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)


def test_the_weight_transform_is_g_g_gt_per_channel_pair():
    wb = rng.standard_normal((1, 1, 3, 3, 2, 3)).astype("float32")
    u = winograd_weight(wb)
    g = np.array([[1, 0, 0], [.5, .5, .5], [.5, -.5, .5], [0, 0, 1]])
    assert u.shape == (16, 1, 1, 2, 3) and u.dtype == np.float32
    np.testing.assert_allclose(u[:, 0, 0, 1, 2].reshape(4, 4), g @ wb[0, 0, :, :, 1, 2] @ g.T,
                               rtol=1e-6)


def test_a_product_of_mismatched_blocks_names_both_shapes():
    with pytest.raises(MLCError, match=r"winograd_product: .*\(16, 1, 2, 3, 3, 8\).*"
                                       r"\(16, 1, 4, 8, 8\)"):
        get("winograd_product").infer_type([T((16, 1, 2, 3, 3, 8)), T((16, 1, 4, 8, 8))], {})


def test_an_output_whose_tiles_do_not_cover_the_map_is_refused():
    with pytest.raises(MLCError, match=r"winograd_output: .*out_hw \(9, 9\)"):
        get("winograd_output").infer_type([T((16, 1, 1, 4, 4, 8))], {"out_hw": (9, 9)})


def test_a_window_that_does_not_fit_is_refused():
    with pytest.raises(MLCError, match=r"winograd_input: a 3x3 window does not fit in 2x2"):
        get("winograd_input").infer_type([T((1, 1, 2, 2, 8))], {"pads": (0, 0, 0, 0)})


@pytest.mark.parametrize("blocks,size,aliased", [(4, 56, True), (8, 28, False), (32, 7, True)])
def test_positions_whose_stores_alias_in_l1_go_above_the_row_of_tiles(blocks, size, aliased):
    # the 16 positions' planes lie 196 KiB (4 x 16 at 56x56) or 32 KiB (32 x 16 at 7x7) apart,
    # multiples of 4 KiB: one tile's 16 stores would share an L1 set
    f = legalize_call("winograd_input", [T((1, blocks, size, size, 16))], {"pads": (1,) * 4})
    g = default_schedule(f, "llvm -mcpu=znver5")
    loops = [line.strip() for line in g.script().splitlines() if line.strip().startswith("for ")]
    assert ("tx in range" in loops[2]) == aliased and "T.unroll(16)" in loops[1]
    x = np.random.default_rng(blocks).standard_normal(f.params[0].shape).astype("float32")
    want, got = np.zeros(f.params[1].shape, "float32"), np.zeros(f.params[1].shape, "float32")
    mb.tir.interpret(f, x, want)
    mb.build(g)(x, got)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
