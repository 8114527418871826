"""The checkpoint file: a zip holding ``checkpoint.json`` (a JSON document) and
``arrays.npz`` (named arrays, loaded with ``allow_pickle=False``). No pickle anywhere, so a
checkpoint from elsewhere cannot run code when it is read.

    >>> write_checkpoint("ckpt.zip", {"step": 10}, {"param/w": w})
    >>> doc, arrays = read_checkpoint("ckpt.zip")
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Mapping

import numpy as np

from ..errors import TrainingError
from ..paths import output_file

FORMAT = 1


def write_checkpoint(path, doc: Mapping, arrays: Mapping[str, np.ndarray]) -> str:
    """Write ``doc`` and ``arrays`` to the zip file ``path``."""
    path = output_file(path, "the checkpoint", TrainingError)
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    try:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("checkpoint.json", json.dumps({"format": FORMAT, **doc}))
            z.writestr("arrays.npz", buf.getvalue())
    except OSError as e:
        raise TrainingError(f"cannot write the checkpoint to {str(path)!r}: "
                            f"{e.strerror or e}; Instead: choose a path you can write") from None
    return os.fspath(path)


def read_checkpoint(path) -> tuple[dict, dict[str, np.ndarray]]:
    """``(document, arrays)`` of a checkpoint written by :func:`write_checkpoint`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise TrainingError(f"no checkpoint at {path!r}")
    try:
        with zipfile.ZipFile(path) as z:
            doc = json.loads(z.read("checkpoint.json"))
            with np.load(io.BytesIO(z.read("arrays.npz")), allow_pickle=False) as a:
                arrays = {k: a[k] for k in a.files}
    except (zipfile.BadZipFile, KeyError, ValueError) as e:
        raise TrainingError(f"{path!r} is not an mlcbook checkpoint ({e}); write one with "
                            "trainer.save(path)") from None
    if doc.get("format") != FORMAT:
        raise TrainingError(f"{path!r} has checkpoint format {doc.get('format')!r}; this "
                            f"mlcbook reads format {FORMAT}")
    return doc, arrays


__all__ = ["write_checkpoint", "read_checkpoint"]
