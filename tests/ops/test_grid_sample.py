"""grid_sample and affine_grid, declared from their te computes, against onnx's reference
implementations of GridSample and AffineGrid (the oracles)."""
import numpy as np
import pytest

from mlcbook.errors import OpDTypeError, OpShapeError
from mlcbook.ops import TensorType as T, get

op_grid_sample = pytest.importorskip("onnx.reference.ops.op_grid_sample")
op_affine_grid = pytest.importorskip("onnx.reference.ops.op_affine_grid")


@pytest.mark.parametrize("x,grid,mode,padding,align", [
    ((1, 2, 3, 4), (1, 2, 5, 2), "linear", "zeros", 0),
    ((2, 1, 4, 3), (2, 3, 2, 2), "cubic", "reflection", 1),
    ((1, 2, 3, 4), (1, 4, 3, 2), "nearest", "border", 0),
    ((1, 1, 2, 3, 4), (1, 2, 2, 3, 3), "linear", "reflection", 0),
    ((1, 2, 5), (1, 4, 1), "linear", "border", 1),
], ids=str)
def test_grid_sample_matches_onnx_reference(x, grid, mode, padding, align):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(x).astype(np.float32)
    gs = (rng.standard_normal(grid) * 1.5).astype(np.float32)   # past the borders too
    got = get("grid_sample").reference(xs, gs, mode=mode, padding_mode=padding,
                                       align_corners=align)
    want = op_grid_sample.GridSample.eval(xs, gs, mode=mode, padding_mode=padding,
                                          align_corners=align)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size,align", [((2, 1, 3, 4), 0), ((1, 2, 2, 3, 4), 1)], ids=str)
def test_affine_grid_matches_onnx_reference(size, align):
    r = len(size) - 2
    theta = np.random.default_rng(1).standard_normal((size[0], r, r + 1)).astype(np.float32)
    got = get("affine_grid").reference(theta, size=size, align_corners=align)
    want = op_affine_grid.AffineGrid.eval(theta, np.array(size, np.int64),
                                          align_corners=align)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_grid_sample_refuses_an_int_grid_naming_it():
    with pytest.raises(OpDTypeError, match="grid_sample: the grid has dtype int64"):
        get("grid_sample").infer_type([T((1, 1, 3, 3)), T((1, 2, 2, 2), "int64")], {})


def test_affine_grid_names_a_theta_that_does_not_fit_the_size():
    with pytest.raises(OpShapeError, match=r"affine_grid: theta \(2, 3, 4\).*do not fit"):
        get("affine_grid").infer_type([T((2, 3, 4))], {"size": (2, 1, 4, 5)})
