"""`mlcbook tour`: the shipped model end to end, then one kernel through the layers."""

from __future__ import annotations

import numpy as np
import pytest

from mlcbook import tour
from mlcbook.cli import main as cli_main


def test_tour_runs_the_model_and_the_kernel_and_checks_both(capsys):
    assert tour.main(["--batch-size", "1", "--size", "32", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    # part 1: the graph is shown, legalized to call_tir, compiled, checked, summarized
    assert 'conv1: Tensor((1, 8, 28, 28), "float32") = op.conv(image, W["conv1.weight"]' in out
    assert "owner conv1" in out
    assert 'relu3 = call_tir("relu_2", (fc1,), Tensor((1, 64), "float32"))' in out
    assert "flatten = op.flatten(pool2)" in out
    assert "max |exe(x) - mb.graph.interpret(mod, x)| =" in out and "  ok" in out
    assert "mb.load(...) of it gives the same output: True" in out
    assert "ops          12 calls of 7 ops (conv x2, batch_norm, relu x3" in out
    assert "kernels      8 PrimFuncs, 8 kernel calls per run (flatten: a view" in out
    assert "group relu1 (out_elemwise_fusable): conv1, conv1_bias, relu1" in out  # bn folded
    assert "KiB arena for the intermediates" in out
    assert "numpy reference evaluator" in out
    # part 2: loop IR, interpreter check, trace, native code checked against numpy
    assert "max |interpreter - numpy|" in out
    assert "sch.vectorize(" in out
    assert out.count("relative error") == 2 and "MISMATCH" not in out
    assert "numpy (a @ b, max)" in out


def test_model_only_stops_after_part_one_and_saves_model_and_input(capsys, tmp_path):
    assert tour.main(["--batch-size", "2", "--repeat", "1", "--model-only",
                      "--save", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Part 2" not in out
    assert f"mlcbook compile {tmp_path / 'tiny_convnet.onnx'}" in out and "--batch-size 2" in out
    assert np.load(tmp_path / "image.npy").shape == (2, 1, 28, 28)
    assert (tmp_path / "tiny_convnet.onnx").stat().st_size > 200_000  # 52k float32 weights


def test_cli_passes_options_to_the_tour(capsys):
    assert cli_main(["tour", "--model-only", "--batch-size", "1", "--repeat", "1"]) == 0
    assert "batch_size=1" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--size", "30"], "--size must be a multiple of 16"),
    (["--batch-size", "0"], "--batch-size must be at least 1, got 0"),
    (["--repeat", "0"], "--repeat must be at least 1"),
])
def test_tour_refuses_bad_options(capsys, argv, message):
    with pytest.raises(SystemExit):
        tour.main(argv)
    assert message in capsys.readouterr().err
