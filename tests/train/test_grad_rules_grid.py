"""grid_sample's gradient rule against central finite differences in float64, in x and in
the grid, over its modes, padding modes and corner alignments; compiled like interpreted;
and through affine_grid (a spatial transformer's theta)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Function, Var, op
from mlcbook.ops.types import TensorType

from .test_grad_rules import check
from .test_grad_rules_nn import compiled_like_interpreted

CASES = list(itertools.product(("linear", "nearest", "cubic"),
                               ("zeros", "border", "reflection"), (0, 1)))


@pytest.mark.parametrize("mode,padding,align", CASES)
def test_grid_sample_in_x_and_grid(mode, padding, align):
    rng = np.random.default_rng(len(mode) * 10 + len(padding) + align)
    # points past the borders (|g| up to 1.3) exercise the padding modes
    arrays = {"x": rng.standard_normal((2, 3, 4, 5)),
              "grid": rng.uniform(-1.3, 1.3, (2, 3, 2, 2))}
    check(lambda x, g: op.grid_sample(x, g, mode=mode, padding_mode=padding,
                                      align_corners=align), arrays)


@pytest.mark.parametrize("shape,grid", [((1, 2, 6), (1, 4, 1)),
                                        ((1, 2, 3, 4, 3), (1, 2, 2, 3, 3))], ids=["1-d", "3-d"])
def test_grid_sample_in_one_and_three_spatial_dimensions(shape, grid):
    rng = np.random.default_rng(len(shape))
    check(lambda x, g: op.grid_sample(x, g, padding_mode="border"),
          {"x": rng.standard_normal(shape), "grid": rng.uniform(-1.2, 1.2, grid)})


def test_nearest_sampling_passes_no_gradient_to_the_grid():
    rng = np.random.default_rng(5)
    x, grid = rng.standard_normal((1, 2, 3, 3)), rng.uniform(-1, 1, (1, 2, 2, 2))
    xs = Var("x", TensorType(x.shape, "float64"))
    gs = Var("grid", TensorType(grid.shape, "float64"))
    f = Function([xs, gs], op.sum(op.grid_sample(xs, gs, mode="nearest"), keepdims=0))
    _, dx, dgrid = mb.graph.interpret(mb.train.grad(f, ["x", "grid"]), x, grid)
    assert not dgrid.any() and dx.sum() == 2 * 2 * 2      # every channel of each point: 1


def test_a_spatial_transformers_theta_trains_through_affine_grid():
    rng = np.random.default_rng(6)
    theta = np.array([[[0.9, 0.1, 0.05], [-0.1, 1.1, -0.1]]]) \
        + 0.01 * rng.standard_normal((1, 2, 3))
    x = rng.standard_normal((1, 2, 5, 5))
    check(lambda t, v: op.grid_sample(v, op.affine_grid(t, size=(1, 2, 4, 4))),
          {"theta": theta, "x": x})


def test_the_backward_graph_compiles_to_what_the_interpreter_computes():
    compiled_like_interpreted(
        lambda x, g: op.grid_sample(x, op.tanh(g), padding_mode="reflection"),
        {"x": (2, 3, 5, 4), "g": (2, 3, 3, 2)})
