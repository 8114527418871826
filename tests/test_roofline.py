"""mlcbook.roofline: the ceilings' arithmetic, the measuring kernels (checked against numpy),
measurement that runs, plotting, and the errors for bad input. No speed is asserted here."""

from __future__ import annotations

import math
import re

import matplotlib
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import roofline
from mlcbook.errors import ArgumentError

matplotlib.use("Agg")


def test_ridge_and_attainable():
    roof = roofline.Roofline(peak_gflops=200.0, bandwidth_gbs=10.0, threads=2)
    assert roof.ridge == 20.0
    assert roof.attainable(1.0) == 10.0       # memory-bound: intensity x bandwidth
    assert roof.attainable(20.0) == 200.0     # the ridge point
    assert roof.attainable(1000.0) == 200.0   # compute-bound: the peak
    assert "2 threads: 200.0 GFLOP/s peak, 10.0 GB/s memory, ridge at 20.0" in repr(roof)


def test_kernel_point_figures():
    p = roofline.KernelPoint("mm", flops=2e9, bytes=1e8, seconds=0.5)
    assert p.intensity == 20.0 and p.gflops == 4.0
    assert p.fraction_of(roofline.Roofline(100.0, 10.0)) == pytest.approx(0.04)


@pytest.mark.parametrize("field", ["flops", "bytes", "seconds"])
def test_kernel_point_rejects_non_positive(field):
    values = {"flops": 1.0, "bytes": 1.0, "seconds": 1.0, field: 0}
    with pytest.raises(ArgumentError, match=f"KernelPoint 'k': {field} must be a positive"):
        roofline.KernelPoint("k", **values)


def test_fma_program_computes_the_recurrence():
    func = roofline.fma_program(chains=3, lanes=8, iterations=5)
    kernel = mb.build(func)
    x = np.linspace(0.1, 0.9, 8, dtype="float32")
    y = kernel(x)
    expected = np.zeros(8, dtype=np.float64)
    for _ in range(5):
        expected = expected * x + x
    np.testing.assert_allclose(y, np.broadcast_to(expected, (3, 8)), rtol=1e-6)


def test_fma_program_is_vector_code():
    kernel = mb.build(roofline.fma_program(chains=4, lanes=16, iterations=10))
    assert re.search(r"fmul \w* ?<16 x float>", kernel.llvm_ir())


def test_copy_program_copies():
    kernel = mb.build(roofline.copy_program(256, lanes=8))
    a = np.arange(256, dtype="float32")
    np.testing.assert_array_equal(kernel(a), a)


def test_measurements_give_finite_positive_figures():
    peak = roofline.measure_peak_gflops(1, repeat=1)
    bandwidth = roofline.measure_bandwidth_gbs(1, megabytes=4, repeat=1)
    assert math.isfinite(peak) and peak > 0
    assert math.isfinite(bandwidth) and bandwidth > 0


def test_measure_on_all_cores():
    roof = roofline.measure(None, repeat=1, megabytes=4)
    assert roof.threads >= 1 and roof.peak_gflops > 0 and roof.bandwidth_gbs > 0


@pytest.mark.parametrize("threads", [0, -1, 2.0, True])
def test_bad_thread_count(threads):
    with pytest.raises(ArgumentError, match="threads must be a positive int"):
        roofline.measure_peak_gflops(threads)


def test_more_threads_than_cores():
    with pytest.raises(ArgumentError, match="more than the .* cores of this machine"):
        roofline.measure_bandwidth_gbs(10_000)


def test_bad_repeat_and_size():
    with pytest.raises(ArgumentError, match="repeat must be a positive int"):
        roofline.measure_peak_gflops(1, repeat=0)
    with pytest.raises(ArgumentError, match="megabytes must be a positive int"):
        roofline.measure_bandwidth_gbs(1, megabytes=0)


def test_plot_draws_roofs_and_points():
    roofs = [roofline.Roofline(100.0, 10.0, 1), roofline.Roofline(200.0, 12.0, 2)]
    points = [roofline.KernelPoint("a", 1e9, 1e7, 0.1), roofline.KernelPoint("b", 1e6, 1e7, 1e-3)]
    ax = roofline.plot(roofs, points, title="test")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_title() == "test"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("1 thread: 100 GFLOP/s") for label in labels)
    assert "a: 10.0 GFLOP/s" in labels and "b: 1.0 GFLOP/s" in labels
    # the roof line bends at the ridge: flat at the peak to its right
    xs, ys = ax.get_lines()[0].get_data()
    assert ys[-1] == 100.0 and ys[0] == pytest.approx(xs[0] * 10.0)


def test_plot_rejects_bad_input():
    with pytest.raises(ArgumentError, match="plot needs one Roofline"):
        roofline.plot([])
    with pytest.raises(ArgumentError, match="plot places KernelPoint objects, got tuple"):
        roofline.plot(roofline.Roofline(1.0, 1.0), [(1.0, 2.0)])
