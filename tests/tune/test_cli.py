"""`mlcbook tune MODEL.onnx` then `mlcbook compile MODEL.onnx --records`."""

import json

import numpy as np
import onnx

from mlcbook.cli import main
from mlcbook.frontend import examples


def test_tune_then_compile_with_records(tmp_path, capsys):
    onnx.save(examples.mlp(batch=2), tmp_path / "mlp.onnx")
    records = tmp_path / "r.jsonl"
    assert main(["tune", str(tmp_path / "mlp.onnx"), "--trials", "3", "--batch", "1",
                 "--cost-model", "analytic", "--warm-start", "2", "-o", str(records)]) == 0
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    baselines = {x["workload"] for x in lines}   # each tuned kernel's default point, once
    assert len(lines) - len(baselines) == 3 and "records in" in capsys.readouterr().out
    out = tmp_path / "mlp.mlcb"
    assert main(["compile", str(tmp_path / "mlp.onnx"), "-o", str(out),
                 "--records", str(records)]) == 0
    x = np.random.default_rng(0).standard_normal((2, 784)).astype("float32")
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(out), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "y.npy")]) == 0
    import onnxruntime as ort
    sess = ort.InferenceSession(str(tmp_path / "mlp.onnx"))
    want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-4, atol=1e-4)


def test_tune_needs_trials(tmp_path, capsys):
    onnx.save(examples.mlp(batch=2), tmp_path / "mlp.onnx")
    assert main(["tune", str(tmp_path / "mlp.onnx"), "--trials", "0", "-o",
                 str(tmp_path / "r.jsonl")]) == 1
    assert "--trials must be at least 1" in capsys.readouterr().err


def test_tune_reports_kernels_by_share_with_trials_speedups_and_the_untuned(tmp_path, capsys):
    from mlcbook import models
    path = models.save_tiny_convnet(tmp_path / "tiny.onnx")
    records = tmp_path / "r.jsonl"
    assert main(["tune", str(path), "--batch-size", "1", "--trials", "8", "--batch", "4",
                 "--cost-model", "random", "--warm-start", "0", "-o", str(records)]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("8 kernels to tune, by their share of an untuned run: ")
    shares = [int(s.split()[-1].rstrip("%")) for s in first.split(": ", 1)[1].split(", ")]
    assert shares == sorted(shares, reverse=True) and 95 <= sum(shares) <= 105
    assert "kernel" in out and "speed-up" in out and "left untuned (" in out
    # 8 trials in rounds of 4: the two biggest kernels got them, the other six none
    assert "(0 trials)" not in out or "no trials left: the 8 trials went to kernels" in out
    assert out.count(", 0 trials)") == 6
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("tuned ") and " of 8 kernels of " in summary
    assert " with 8 trials in " in summary
    lines = [json.loads(x) for x in records.read_text().splitlines()]
    # the 8 trials, and any re-measurements of the best (recorded, not trials)
    assert len([x for x in lines if x["trace"] != {"default_schedule": True}]) >= 8


def test_tune_help_shows_the_defaults(capsys):
    import pytest
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "the cost model (default: xgboost)" in out
    assert "candidates measured per round (default: 8)" in out
    assert "(default: None)" not in out
