"""The published cells the default store ships beside the simulated matrix (data/published/<source>/ folders):
where they are, their files' stamp and hash, and which runs of a store came from them.

Each folder under ``data/published/`` is a published per-cell table with its per-position file (the shape
:mod:`ingest.results.published_cells` reads, e.g. vLLM's AMD speculative-decoding post). Building the default
store imports every folder through the same reader and landing as ``python -m ingest results FOLDER`` — backend
``import``, the source URL on every cell, load not stated where the post gives none — so the landing page and
``analysis winners --backend import`` show real, published numbers next to the simulated ones. The landing itself
is :func:`ingest.default_data.import_published` (it needs the result readers; this module is read on every open of
the default store, through ingest/default_stamp.py, and imports none of them).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb

from ingest import paths

PUBLISHED_DIR = paths.DATA_DIR / "published"
IMPORTERS = ("published_cells", "published_positions")


def files(root: Path | None = None) -> list[Path]:
    """Every shipped CSV file (what a change of the default data includes).

    A plain listing, not the reader's header check: every read of the default store checks this stamp, and a
    read-only command must not import the result readers (tests/test_startup.py). A CSV the import skips only
    costs a rebuild when it changes.
    """
    root = PUBLISHED_DIR if root is None else root
    if not root.is_dir():
        return []
    return sorted(f for d in root.iterdir() if d.is_dir() for f in d.glob("*.csv") if f.is_file())


def run_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The store's runs imported from a shipped folder (replaced when the shipped files change)."""
    rows = con.execute("SELECT run_id FROM runs WHERE backend = 'import' AND importer IN (SELECT unnest(?)) "
                       "AND replace(source, '\\', '/') LIKE '%/data/published/%'", [list(IMPORTERS)]).fetchall()
    return [r[0] for r in rows]


def stamp_parts(root: Path | None = None) -> list[str]:
    """Names, sizes and mtimes of the shipped files, for the default data's stamp."""
    out = []
    for f in files(root):
        st = f.stat()
        out.append(f"published/{f.parent.name}/{f.name}:{st.st_size}:{st.st_mtime_ns}")
    return out


def update_hash(h: hashlib._Hash, root: Path | None = None) -> None:
    """Feed the shipped files' names and bytes to the default data's content hash."""
    for f in files(root):
        h.update(f"published/{f.parent.name}/{f.name}".encode())
        h.update(f.read_bytes())
