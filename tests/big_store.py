"""A store of more than 10 M request rows for the scale tests (issue 16), built once per test session.

Owns :func:`build_big_store` (and :func:`existing_big_store`, for a store built beforehand). The rows come
from ``benchmarks/generate.py`` (every cell of the default matrix
resampled from the embedded simulated run, backend ``sim``) and land through the product's own bulk path,
``python -m ingest results DIR`` — both as subprocesses, so the multi-GB peaks of generating and landing
12 M rows stay out of the test process. 4,099 requests per cell (12.1 M rows over the 2,952 cells): above
4,096 a cell's replicates take the large-cell sampler (docs/metrics.md), which keeps the build near a minute
of CI on 2 cores; a drill-down's latency chart still summarises 4 × 4,099 requests, over Altair's 5,000-row
limit. The export is removed once landed; the store (~0.5 GB) lives in pytest's temporary folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, cli

BIG_ROWS = 12_100_000  # ≥ 10 M, and > 4,096 per cell of the default matrix's 2,952 cells


def build_big_store(folder: Path, rows: int = BIG_ROWS) -> tuple[Path, dict]:
    """Generate ``rows`` request rows and import them into ``folder/big.duckdb``; returns (path, summary)."""
    export, db = folder / "export", folder / "big.duckdb"
    t0 = time.perf_counter()
    gen = subprocess.run([sys.executable, str(REPO / "benchmarks" / "generate.py"), str(rows), str(export)],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert gen.returncode == 0, gen.stderr[-2000:]
    t1 = time.perf_counter()
    proc = cli("ingest", "results", str(export), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    t2 = time.perf_counter()
    shutil.rmtree(export)
    landed = json.loads(proc.stdout)["files"][0]
    return db, {"requests": int(landed["requests"]), "cells": int(landed["rows"]),
                "generate_s": round(t1 - t0, 1), "ingest_s": round(t2 - t1, 1)}


def existing_big_store(db: Path) -> tuple[Path, dict]:
    """A store built beforehand (``SPECTUNE_BIG_STORE``), summarised as :func:`build_big_store` does."""
    import duckdb

    assert db.is_file(), f"SPECTUNE_BIG_STORE={db}: no such store"
    con = duckdb.connect(str(db), read_only=True)
    try:
        (requests, cells), = con.execute("SELECT count(*), count(DISTINCT cell_id) FROM requests").fetchall()
    finally:
        con.close()
    return db, {"requests": int(requests), "cells": int(cells), "generate_s": None, "ingest_s": None}
