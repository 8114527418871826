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
    trials = [x for x in lines if x["trace"] != {"default_schedule": True}]
    assert len(trials) == 3 and "records in" in capsys.readouterr().out
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
