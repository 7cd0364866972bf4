"""Whether a store's default data is current: the stamp of the embedded default files, read without opening
the store or importing the result readers.

The default data is the simulated run under data/default/ (:data:`DEFAULT_DIR`, one Parquet file per table of
:data:`TABLES`) and the published tables under data/published/ (ingest/published_default.py). Their stamp is the
files' names, sizes and mtimes (:func:`files_stamp`); a store built or refreshed from them keeps it in a sidecar
(``<store>.default-stamp``, made and read through ingest/safefile.py). :func:`is_current` compares the two on every
open of the default store (ingest/open_store.py); only when they differ does ingest/default_data.py hash the
content and refresh the store.
"""

from __future__ import annotations

from pathlib import Path

from ingest import paths, published_default, safefile

DEFAULT_DIR = paths.DATA_DIR / "default"
TABLES = ("runs", "cells", "positions", "requests", "model_draws")


def files_stamp(folder: Path | None = None) -> str:
    """Names, sizes and mtimes of the default Parquet files: changes whenever a file is rewritten."""
    folder = DEFAULT_DIR if folder is None else folder
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


def is_current(path: Path, folder: Path | None = None) -> bool:
    """The store at ``path`` was built or last checked against the default files as they are now."""
    return read_stamp(path) == files_stamp(DEFAULT_DIR if folder is None else folder)
