from mlcbook import tour


def test_tour_runs_every_layer_and_checks_against_numpy(capsys):
    assert tour.main(["--size", "32", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "max |interpreter - numpy|" in out
    assert "sch.vectorize(" in out  # the trace is shown
    assert out.count(" ok") == 2 and "MISMATCH" not in out
    assert "numpy (a @ b, max)" in out


def test_tour_refuses_a_size_it_cannot_tile(capsys):
    import pytest
    with pytest.raises(SystemExit):
        tour.main(["--size", "30"])
    assert "multiple of 16" in capsys.readouterr().err
