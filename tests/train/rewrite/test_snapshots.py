import pytest

from mlcbook.errors import RewriteError
from mlcbook.train.rewrite.snapshots import Snapshot, SnapshotRing

from . import _models as M


def _snap(step):
    return Snapshot(M.mlp(), {"step": step, "params": {}, "state": {}, "data": None})


def test_ring_keeps_the_newest_and_finds_one_before_a_step():
    ring = SnapshotRing(2)
    for s in (0, 10, 20):
        ring.push(_snap(s))
    assert len(ring) == 2 and ring.latest().step == 20
    assert ring.latest(before_step=15).step == 10
    with pytest.raises(RewriteError, match="no snapshot"):
        ring.latest(before_step=5)


def test_ring_needs_room():
    with pytest.raises(RewriteError, match="capacity"):
        SnapshotRing(0)
