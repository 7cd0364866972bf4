"""The re-scoring matrices kept for an unchanged store: ``rescore`` reads one file instead of the store's requests.

:func:`analysis.rescore.matrix.load_matrices` is a function of the store, the filters and spectune's code, so it is
keyed exactly as the answer cache keys a read-only answer (analysis/cli/answer_cache.py: the store's content stamp,
ingest/storestamp.py; every ``.py`` file of the packages, the data files, ``SPECTUNE_*``)
with the family and GPU filters as the command words. Any write to the store, edit of the code or new data file
makes a new key; the old file is never read again and is dropped after :data:`MAX_FILES` newer ones. Matrices
larger than :data:`MAX_BYTES` are not kept. The commands that write the store leave the unfiltered matrices of
the new store behind (analysis/cli/precompute.py), so the first ``rescore`` after a write reads them too.

One ``.npz`` per key, without pickles: every cell's samples concatenated with offsets, the replicate ratios as two
(cells × replicates) arrays, and the cells' and matrices' fields as JSON (floats round-trip exactly). Same switch
as the answer cache (``SPECTUNE_CACHE=off``) and same rule: a file that cannot be read or written is ignored —
it can make ``rescore`` faster, never wrong or failing. Same folder and same care (ingest/safefile.py): files live
only in a private folder of the current user, are loaded only when regular, the user's own, at most
:data:`MAX_BYTES` and carrying :data:`MAGIC` and their key; pruning removes only ``matrices-<64 hex>.npz`` files that
carry the header.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import numpy as np

from analysis.cli import answer_cache
from analysis.rescore.matrix import CellSamples, Matrix
from ingest import safefile

MAX_FILES = 2  # a file is about 40 bytes per request row of the store
MAX_BYTES = 256 * 2**20  # a larger store's matrices are not kept (~6 M request rows): disk in proportion to use
PREFIX = "matrices-"
FILE_NAME = re.compile(r"matrices-[0-9a-f]{64}\.npz")
MAGIC = "spectune-matrices 1"  # the first field of every file's meta: what read and prune recognise as theirs
CELL_FIELDS = ("method", "depth", "workload", "concurrency", "in_mean", "tau", "backend", "cell_id", "provenance")


def _words(families: tuple[str, ...], gpus: tuple[str, ...]) -> list[str]:
    return ["rescore-matrices", *(f"--family={f}" for f in families), *(f"--gpu={g}" for g in gpus)]


def _name(key: str) -> str:
    return f"{PREFIX}{key}.npz"


def _is_ours(head: bytes) -> bool:
    """An ``.npz`` this cache wrote: a zip whose first member is ``meta.npy``, stored uncompressed, holding
    :data:`MAGIC` (np.savez writes members in the order given and does not compress)."""
    return head.startswith(b"PK\x03\x04") and head[30:38] == b"meta.npy" and MAGIC.encode() in head


def cached_matrices(db: Path, families: tuple[str, ...], gpus: tuple[str, ...],
                    load: Callable[[], dict[tuple[str, str], Matrix]]) -> dict[tuple[str, str], Matrix]:
    """``load()``'s matrices, from the kept file when the store, code and filters are unchanged."""
    key = answer_cache.key(_words(families, gpus), db) if answer_cache.enabled() else None
    if key is None:
        return load()
    found = kept(key)
    if found is not None:
        return found
    matrices = load()
    if answer_cache.key(_words(families, gpus), db) == key:  # the store did not change while it was read
        fd = answer_cache.open_folder(create=True)
        if fd is not None:
            try:
                write(_name(key), matrices, dir_fd=fd, key=key)
            finally:
                os.close(fd)
    return matrices


def kept(key: str) -> dict[tuple[str, str], Matrix] | None:
    """The matrices kept for ``key`` in the answer cache's folder (under its rules: ingest/safefile.py), or None."""
    fd = answer_cache.open_folder(create=False)
    if fd is None:
        return None
    try:
        return read(_name(key), dir_fd=fd, key=key)
    finally:
        os.close(fd)


def write(name: str, matrices: dict[tuple[str, str], Matrix], *, dir_fd: int, key: str) -> None:
    """Keep the matrices as ``name`` in the open cache folder (fresh temp name, atomic rename), then drop the
    oldest beyond :data:`MAX_FILES` — only files this cache wrote."""
    cells = [c for m in matrices.values() for c in m.cells.values()]
    sizes = np.array([c.ttft.size for c in cells], dtype=np.int64)
    n_rep = max((m.replicates for m in matrices.values()), default=0)
    if (3 * int(sizes.sum()) + 2 * n_rep * len(cells)) * 8 > MAX_BYTES:
        return
    doc = {"magic": MAGIC, "key": key, "matrices": [  # magic first: within the file's first bytes (_is_ours)
        {"family": m.family, "gpu": m.gpu, "replicates": m.replicates, "models": m.models,
         "tensor_parallel_size": m.tensor_parallel_size, "draft_models": m.draft_models,
         "cells": [[list(k), [getattr(c, f) for f in CELL_FIELDS]] for k, c in m.cells.items()]}
        for m in matrices.values()]}

    def stacked(name: str) -> np.ndarray:  # every cell carries n_rep ratios (NaN when it has no replicates)
        return np.stack([getattr(c, name) for c in cells]) if cells else np.zeros((0, n_rep))

    def fill(fd: int) -> None:  # streamed into the fresh temp file: no second copy in memory
        with os.fdopen(os.dup(fd), "wb") as fh:
            np.savez(fh, meta=np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8), sizes=sizes,
                     ttft=_concat(cells, "ttft"), tpot=_concat(cells, "tpot"), out=_concat(cells, "out"),
                     thr_ratio=stacked("thr_ratio"), p99_ratio=stacked("p99_ratio"))

    with contextlib.suppress(OSError, ValueError, safefile.Refused):
        safefile.write_with(name, fill, dir_fd=dir_fd, mode=0o600)
        answer_cache.prune(dir_fd, FILE_NAME, _is_ours, MAX_FILES)


def _concat(cells: list[CellSamples], name: str) -> np.ndarray:
    return np.concatenate([getattr(c, name) for c in cells]) if cells else np.zeros(0)


def read(name: str, *, dir_fd: int, key: str) -> dict[tuple[str, str], Matrix] | None:
    """The kept matrices, or None when there is no file of ours for the key (a link, FIFO, device, another user's
    or oversized file is never opened blocking nor loaded)."""
    try:
        fd = safefile.open_regular(name, MAX_BYTES + 2**20, dir_fd=dir_fd, owner=os.getuid())
    except (safefile.Refused, OSError):
        return None
    if fd is None:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            if not _is_ours(fh.read(4096)):
                return None
            fh.seek(0)
            return _load(fh, key)
    except OSError:
        return None


def _load(fh: BinaryIO, key: str) -> dict[tuple[str, str], Matrix] | None:
    try:
        with np.load(fh, allow_pickle=False) as z:
            doc = json.loads(z["meta"].tobytes())
            if not isinstance(doc, dict) or doc.get("magic") != MAGIC or doc.get("key") != key:
                return None
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
