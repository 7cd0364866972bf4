"""The default data's stamp: names, sizes and mtimes of the embedded files, and the sidecar (``<store>.default-stamp``)
that records the stamp the default store was last built or checked against (ingest/default_data.py).

Standard library only: every read of the default store checks it, including the stored-answer path of ``winners``
(analysis/derived_read.py), which must not import polars.
"""

from __future__ import annotations

from pathlib import Path

from ingest import paths, published_default, safefile

DEFAULT_DIR = paths.DATA_DIR / "default"
TABLES = ("runs", "cells", "positions", "requests", "model_draws")


def files_stamp(folder: Path = DEFAULT_DIR) -> str:
    """Names, sizes and mtimes of the default Parquet files: changes whenever a file is rewritten."""
    parts = []
    for name in TABLES:
        try:
            st = (folder / f"{name}.parquet").stat()
        except OSError:
            continue
        parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    parts += published_default.stamp_parts()  # the shipped published tables are default data too
    return " ".join(parts)


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".default-stamp")


STAMP_MAX_BYTES = 4096  # a stamp is five "name:size:mtime" words; anything bigger is not ours


def write_stamp(path: Path, stamp: str) -> None:
    # ingest/safefile.py: a link, FIFO or device at the name is left alone (said once); a read-only folder is
    # silent. Either way the content check runs again next time, nothing worse.
    safefile.write_sidecar(stamp_path(path), stamp.encode())


def read_stamp(path: Path) -> str | None:
    raw = safefile.read_sidecar(stamp_path(path), STAMP_MAX_BYTES)
    return raw.decode("utf-8", "replace") if raw is not None else None


def is_current(path: Path, folder: Path = DEFAULT_DIR) -> bool:
    """True when the sidecar says the store at ``path`` was built or checked against the embedded files as they are
    (False: ingest/default_data.py refresh_if_stale has work to check)."""
    return read_stamp(path) == files_stamp(folder)
