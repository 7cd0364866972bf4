"""Store benchmarks: Parquet → store ingest, winners over a big store, and the pandas baseline in the same run.

Owns ``ingest_rows_per_s``, ``winners_10m_s``, ``winners_10m_pandas_s`` (+ the point-only pandas floor).
Ingest goes through the CLI's own code (``python -m ingest results DIR``, in this process, so interpreter
start-up is not counted): read + validate the export, materialise every cell's bootstrap replicates, land
everything in one transaction. Winners opens a read-only connection per repeat, as the dashboard does.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

from benchmarks import baseline_pandas
from benchmarks.common import figure, timed
from benchmarks.generate import make_export


def export_dir(workdir: Path, rows: int) -> Path:
    """The generated export of ``rows`` request rows (made once per work dir)."""
    out = workdir / f"export_{rows}"
    if not (out / "requests.parquet").exists():
        make_export(rows, out)
    return out


def _cli(module_main, argv: list[str]) -> dict[str, Any]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = module_main(argv)
    if code != 0:
        raise RuntimeError(f"{argv[0]} exited {code}")
    return json.loads(buf.getvalue())


def ingest(export: Path, db: Path, repeats: int) -> tuple[dict[str, Any], int]:
    """Import ``export`` into a fresh ``db`` per repeat; rows/s of request rows. The last store is kept."""
    from ingest.__main__ import main as ingest_main

    def fresh() -> None:
        for p in (db, db.with_name(db.name + ".wal")):
            p.unlink(missing_ok=True)

    s = timed(lambda: _cli(ingest_main, ["results", str(export), "--db", str(db), "--json"]), repeats, setup=fresh)
    rows = int(s.results[-1]["files"][0]["requests"])
    rates = [rows / w for w in s.wall]
    return figure(rates, unit="rows/s", target=1_000_000, higher_is_better=True, rows=rows,
                  wall_s=[round(w, 3) for w in s.wall], cpu_s=[round(c, 3) for c in s.cpu],
                  path="python -m ingest results DIR (in-process): read + validate Parquet, bootstrap replicates "
                       "for every cell, one transaction"), rows


def bootstrap_only(export: Path) -> dict[str, Any]:
    """The replicate materialisation alone (the part of landing that the pre-aggregation costs), one run."""
    import polars as pl

    from ingest import store

    cells, reqs = pl.read_parquet(export / "cells.parquet"), pl.read_parquet(export / "requests.parquet")
    s = timed(lambda: store.bootstrap_frames(cells, reqs), 1)
    return figure(s.wall, cpu=s.cpu, cells=cells.height, rows=reqs.height)


def winners(db: Path, repeats: int) -> tuple[dict[str, Any], dict]:
    from analysis.winners import winners as winners_fn
    from ingest import store

    def once() -> dict:
        with store.session(db, read_only=True) as con:
            return winners_fn(con)

    once()  # first touch of the file (OS cache), as a dashboard that has already started
    s = timed(once, repeats)
    doc = s.results[-1]
    return figure(s.wall, target=0.3, cpu=s.cpu, groups=len(doc["cells"]), simulated=doc["simulated"]), doc


def pandas_baseline(export: Path, repeats: int, doc: dict) -> tuple[dict[str, Any], dict[str, Any]]:
    s = timed(lambda: baseline_pandas.winners_pandas(export), repeats)
    p = timed(lambda: baseline_pandas.winners_pandas_point(export), max(1, repeats))
    full = figure(s.wall, cpu=s.cpu, agreement=baseline_pandas.agreement(doc, s.results[-1]),
                  computes="per-cell point + 200 Poisson-bootstrap replicates from raw rows, then the winner rule")
    point = figure(p.wall, cpu=p.cpu, agreement=baseline_pandas.agreement(doc, p.results[-1]),
                   computes="point-estimate winners only (one groupby over raw rows; no intervals, no ties)")
    return full, point
