import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import InductionError
from mlcbook.graph.interpret import interpret
from mlcbook.train.induction import CANDIDATES, InterpretedTrainer, Structure, structure_of
from mlcbook.train.rewrite import Runtime, widen


def test_names_say_the_family_member():
    assert Structure(0).name == "linear"
    assert Structure(3, 32, "tanh", residual=True, norm=True).name == "mlp-3x32-tanh+res+ln"
    assert len({s.name for s in CANDIDATES}) == len(CANDIDATES)


def test_the_ir_has_the_structures_motifs():
    m = Structure(3, 16, residual=True, norm=True).build(inputs=5, outputs=2, batch=4)
    s = structure_of(m)
    assert s["widths"] == (16, 16, 16) and m.params[0].type.shape == (4, 5)
    assert s["motifs"]["gemm>layer_norm"] == 3 and s["motifs"]["relu>add"] == 3
    assert s["motifs"]["add>add"] == 1 and s["motifs"]["add>gemm"] == 2
    assert structure_of(Structure(0).build(5, 2))["motifs"] == {}


@pytest.mark.parametrize("kw,message", [({"depth": -1}, "depth=-1"),
                                        ({"depth": 1, "width": 0}, "width=0"),
                                        ({"depth": 1, "activation": "gelu"}, "'gelu'")])
def test_bad_structures(kw, message):
    with pytest.raises(InductionError, match=message):
        Structure(**kw)


def test_an_interpreted_step_is_the_compiled_step():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, 5)).astype(np.float32), np.array([0, 1, 2, 1])
    model = mb.train.mlp((5, 8, 3), batch=4)
    native = mb.train.compile_step(model, optimizer=mb.train.Adam(0.01))
    interp = InterpretedTrainer(model, "cross_entropy", mb.train.Adam(0.01))
    for _ in range(2):
        assert interp.step(x, y) == pytest.approx(native.step(x, y), rel=1e-5)
    for k, v in native.params.items():
        np.testing.assert_allclose(interp.params[k], v, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(interp.predict(x[:3]), interpret(native.model(), x)[:3],
                               rtol=1e-5)


def test_the_runtime_widens_a_residual_stream_exactly():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 5)).astype(np.float32), rng.integers(0, 2, 64)
    model = Structure(3, 8, residual=True).build(5, 2, batch=16)
    rt = Runtime(InterpretedTrainer(model, "cross_entropy", mb.train.Adam(0.01),
                                    mb.train.Batches(x, y, 16)))
    rt.run(3)
    before = rt.trainer.predict(x)
    r = rt.apply(lambda m, state: widen(m, "fc2", 12, state=state))
    assert type(rt.trainer) is InterpretedTrainer and r.tag == "exact"
    assert rt.trainer.params["fc1.weight"].shape == (12, 5)          # the whole stream
    assert rt.trainer.params["fc2.weight"].shape == (12, 12)         # both of its axes
    np.testing.assert_allclose(rt.trainer.predict(x), before, rtol=1e-5, atol=1e-6)
    assert np.isfinite(rt.run(2)).all()
