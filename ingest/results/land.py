"""Landing parsed result files: duplicates detected by file hash, then every new row in ONE transaction.

A file whose hash is already recorded in ``runs.file_hash`` (or that appeared earlier in the same
invocation) adds nothing and is reported with its cells as duplicates. Everything new — runs (with
provenance), cells, positions, requests, bootstrap replicates, published rows — goes through
``store.write_tables_bulk`` in a single transaction, so an invocation lands completely or not at all.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict
from typing import Any

import duckdb
import numpy as np
import polars as pl

from ingest import sql, store
from ingest.results.model import ParsedFile

TABLES = ("cells", "positions", "requests", "model_draws", "cell_bootstrap")


def _run_frame(parsed: ParsedFile) -> pl.DataFrame:
    return pl.DataFrame([asdict(parsed.run)], schema_overrides={"finished_at": pl.Datetime("us")})


def _concat(frames: list[pl.DataFrame]) -> pl.DataFrame | None:
    frames = [f for f in frames if f.height]
    return pl.concat(frames, how="diagonal_relaxed") if frames else None


def land(con: duckdb.DuckDBPyConnection, files: list[ParsedFile]) -> list[dict[str, Any]]:
    """Write the new parts of ``files``; returns one report per file ({path, format, rows, duplicates, ...})."""
    existing = sql.frame(con, "SELECT run_id, cell_id FROM cells")
    claimed = existing if existing.height else pl.DataFrame(schema={"run_id": pl.String, "cell_id": pl.String})
    seen_hashes: set[str] = set()
    parts: dict[str, list[pl.DataFrame]] = {t: [] for t in (*TABLES, "runs")}
    extra: dict[str, list[pl.DataFrame]] = {}
    reports = []
    for f in files:
        report: dict[str, Any] = {"path": str(f.path), "format": f.format, "rows": 0, "duplicates": 0,
                                  "requests": 0, "run_id": f.run.run_id, "file_hash": f.file_hash,
                                  "warnings": f.warnings, "summary": f.summary}
        reports.append(report)
        earlier = store.find_run_by_file_hash(con, f.file_hash)
        if earlier or f.file_hash in seen_hashes:
            report["duplicates"] = f.n_cells
            report["already_imported_as"] = earlier or f.run.run_id
            continue
        seen_hashes.add(f.file_hash)
        if f.tables:  # spectune export: its own runs and cells; ours is a provenance row
            cells = f.tables["cells"].join(claimed, on=["run_id", "cell_id"], how="anti")
            report["rows"], report["duplicates"] = cells.height, f.n_cells - cells.height
            if cells.height == 0:
                continue
            keys = cells.select("run_id", "cell_id")
            parts["cells"].append(cells)
            for t in ("positions", "requests", "model_draws", "cell_bootstrap"):
                if t in f.tables and f.tables[t].height:
                    rows = store.keep_cells(f.tables[t], keys)  # a semi join over runs of rows (cheap)
                    parts[t].append(rows)
                    report["requests"] += rows.height if t == "requests" else 0
            parts["runs"] += [f.tables["runs"], _run_frame(f)]
            claimed = pl.concat([claimed, keys])
            continue
        for cell in f.cells:
            # imports often lack whole columns (no TTFT, no output tokens): numpy's empty-slice notices are noise
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                frames = store.cell_frames(f.run.run_id, cell.key, cell.requests, window_s=cell.window_s,
                                           gpu_count=cell.gpu_count, counters=cell.counters, itl_ms=cell.itl_ms,
                                           headline=cell.headline, status=cell.status, error=cell.error,
                                           labels=cell.labels or None)
            for t in TABLES:
                if t in frames:
                    parts[t].append(frames[t])
            report["requests"] += frames["requests"].height if "requests" in frames else 0
        report["rows"] = len(f.cells)
        parts["runs"].append(_run_frame(f))
        for t, frame in f.extra.items():
            extra.setdefault(t, []).append(frame)
            report.setdefault("extra_rows", {})[t] = frame.height  # e.g. per-position rates of imported cells
    tables = {t: c for t, fr in parts.items() if (c := _concat(fr)) is not None}
    extras = {t: c for t, fr in extra.items() if (c := _concat(fr)) is not None}
    if "runs" in tables:
        tables.setdefault("cells", pl.DataFrame(schema={"run_id": pl.String, "cell_id": pl.String}))
        store.write_tables_bulk(con, tables, extra=extras or None)
    return reports
