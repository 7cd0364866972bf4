"""The re-scoring matrices kept for an unchanged store: ``rescore`` reads one file instead of the store's requests.

:func:`analysis.rescore.matrix.load_matrices` is a function of the store, the filters and spectune's code, so it is
keyed exactly as the answer cache keys a read-only answer (analysis/cli/answer_cache.py: the store's and its
write-ahead log's ``(size, mtime_ns, inode)``, every ``.py`` file of the packages, the data files, ``SPECTUNE_*``)
with the family and GPU filters as the command words. Any write to the store, edit of the code or new data file
makes a new key; the old file is never read again and is dropped after :data:`MAX_FILES` newer ones. Matrices
larger than :data:`MAX_BYTES` are not kept. The commands that write the store leave the unfiltered matrices of
the new store behind (analysis/cli/precompute.py), so the first ``rescore`` after a write reads them too.

One ``.npz`` per key, without pickles: every cell's samples concatenated with offsets, the replicate ratios as two
(cells × replicates) arrays, and the cells' and matrices' fields as JSON (floats round-trip exactly). Same switch
as the answer cache (``SPECTUNE_CACHE=off``) and same rule: a file that cannot be read or written is ignored —
it can make ``rescore`` faster, never wrong or failing.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from analysis.cli import answer_cache
from analysis.rescore.matrix import CellSamples, Matrix

MAX_FILES = 2  # a file is about 40 bytes per request row of the store
MAX_BYTES = 256 * 2**20  # a larger store's matrices are not kept (~6 M request rows): disk in proportion to use
PREFIX = "matrices-"
CELL_FIELDS = ("method", "depth", "workload", "concurrency", "in_mean", "tau", "backend", "cell_id", "provenance")


def _words(families: tuple[str, ...], gpus: tuple[str, ...]) -> list[str]:
    return ["rescore-matrices", *(f"--family={f}" for f in families), *(f"--gpu={g}" for g in gpus)]


def _path(key: str) -> Path:
    return answer_cache.cache_dir() / f"{PREFIX}{key}.npz"


def cached_matrices(db: Path, families: tuple[str, ...], gpus: tuple[str, ...],
                    load: Callable[[], dict[tuple[str, str], Matrix]]) -> dict[tuple[str, str], Matrix]:
    """``load()``'s matrices, from the kept file when the store, code and filters are unchanged."""
    key = answer_cache.key(_words(families, gpus), db) if answer_cache.enabled() else None
    if key is None:
        return load()
    kept = read(_path(key))
    if kept is not None:
        return kept
    matrices = load()
    if answer_cache.key(_words(families, gpus), db) == key:  # the store did not change while it was read
        write(_path(key), matrices)
    return matrices


def write(path: Path, matrices: dict[tuple[str, str], Matrix]) -> None:
    cells = [c for m in matrices.values() for c in m.cells.values()]
    sizes = np.array([c.ttft.size for c in cells], dtype=np.int64)
    n_rep = max((m.replicates for m in matrices.values()), default=0)
    if (3 * int(sizes.sum()) + 2 * n_rep * len(cells)) * 8 > MAX_BYTES:
        return
    doc = {"matrices": [{"family": m.family, "gpu": m.gpu, "replicates": m.replicates, "models": m.models,
                         "tensor_parallel_size": m.tensor_parallel_size, "draft_models": m.draft_models,
                         "cells": [[list(k), [getattr(c, f) for f in CELL_FIELDS]] for k, c in m.cells.items()]}
                        for m in matrices.values()]}

    def stacked(name: str) -> np.ndarray:  # every cell carries n_rep ratios (NaN when it has no replicates)
        return np.stack([getattr(c, name) for c in cells]) if cells else np.zeros((0, n_rep))

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, meta=np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8), sizes=sizes,
                     ttft=_concat(cells, "ttft"), tpot=_concat(cells, "tpot"), out=_concat(cells, "out"),
                     thr_ratio=stacked("thr_ratio"), p99_ratio=stacked("p99_ratio"))
        os.replace(tmp, path)
        kept = sorted(path.parent.glob(f"{PREFIX}*.npz"), key=lambda p: p.stat().st_mtime_ns)
        for old in kept[:-MAX_FILES]:
            old.unlink(missing_ok=True)
    except (OSError, ValueError):
        with contextlib.suppress(OSError, UnboundLocalError):
            os.unlink(tmp)


def _concat(cells: list[CellSamples], name: str) -> np.ndarray:
    return np.concatenate([getattr(c, name) for c in cells]) if cells else np.zeros(0)


def read(path: Path) -> dict[tuple[str, str], Matrix] | None:
    """The kept matrices, or None when there is no readable file for the key."""
    try:
        with np.load(path, allow_pickle=False) as z:
            doc = json.loads(z["meta"].tobytes())
            sizes, ttft, tpot, out = z["sizes"], z["ttft"], z["tpot"], z["out"]
            thr, p99 = z["thr_ratio"], z["p99_ratio"]
        ends = np.cumsum(sizes).tolist()
        out_matrices: dict[tuple[str, str], Matrix] = {}
        i = 0
        for md in doc["matrices"]:
            m = Matrix(md["family"], md["gpu"], replicates=md["replicates"], models=md["models"],
                       tensor_parallel_size=md["tensor_parallel_size"], draft_models=md["draft_models"])
            for key, fields in md["cells"]:
                a, b = (ends[i - 1] if i else 0), ends[i]
                m.cells[tuple(key)] = CellSamples(**dict(zip(CELL_FIELDS, fields, strict=True)), ttft=ttft[a:b],
                                                  tpot=tpot[a:b], out=out[a:b], thr_ratio=thr[i], p99_ratio=p99[i])
                i += 1
            out_matrices[(m.family, m.gpu)] = m
        return out_matrices if i == sizes.size else None
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile):
        return None
