"""spectune's own exchange format: a folder of Parquet files, one per store table (a run export or a host shard).

``python -m ingest export --run RUN --out DIR`` writes ``runs.parquet``, ``cells.parquet``,
``positions.parquet`` and ``requests.parquet`` (:func:`export_runs`). Runner processes on several hosts
can each export their shard; importing the folders merges them: cells keep their original run ids and
backends (a simulated run stays labelled ``sim``), cells already in the store are skipped, bootstrap
replicates are recomputed. The import itself is recorded as a provenance run (backend ``import``, no
cells of its own) carrying the folder's hash.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ingest import caps, sql, store
from ingest.errors import InputError, UsageError
from ingest.filechecks import PARQUET_MAGIC
from ingest.results.model import ParsedFile, ReadOptions, import_run
from ingest.results.source import check_size, sha256_file

FORMAT = "spectune_parquet"
TABLES = ("runs", "cells", "positions", "requests", "model_draws")  # model_draws: simulated cells' model error
REQUIRED = {
    "runs": ("run_id", "backend"),
    "cells": ("run_id", "cell_id", "method", "depth", "family", "model", "workload", "gpu", "concurrency", "status"),
    "positions": ("run_id", "cell_id", "position", "acceptance"),
    "requests": ("run_id", "cell_id", "request_index"),
    "model_draws": ("run_id", "cell_id", "replicate"),
}
MAGIC = PARQUET_MAGIC


def folder_of(path: Path) -> Path | None:
    """The export folder ``path`` names (the folder itself, or one of its table files), if it is one."""
    folder = path if path.is_dir() else path.parent
    return folder if table_files(folder, "cells") else None


def table_files(folder: Path, name: str) -> list[Path]:
    """The files of one table: ``NAME.parquet``, or its parts ``NAME.part-00000.parquet`` … (an export splits a
    table larger than the import cap, ingest.caps, so that every file imports back under it)."""
    whole = folder / f"{name}.parquet"
    if whole.exists():
        return [whole]
    return sorted(folder.glob(f"{name}.part-[0-9][0-9][0-9][0-9][0-9].parquet"))


def _read_table(folder: Path, name: str) -> pl.DataFrame | None:
    files = table_files(folder, name)
    if not files:
        return None
    frames = [_read_file(path, name) for path in files]
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="vertical_relaxed")


def _read_file(path: Path, name: str) -> pl.DataFrame:
    check_size(path)
    with open(path, "rb") as fh:
        head = fh.read(4)
        fh.seek(-4 if path.stat().st_size >= 8 else 0, 2)
        tail = fh.read(4)
    if head != MAGIC or tail != MAGIC:
        raise InputError(path, 0, "not a Parquet file (missing PAR1 magic); expected a spectune export table")
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars/arrow raise many types for corrupt files
        raise InputError(path, 0, f"unreadable Parquet: {str(exc).splitlines()[0][:160]}") from None
    missing = [c for c in REQUIRED[name] if c not in frame.columns]
    if missing:
        raise InputError(path, 0, f"{name}.parquet lacks columns {', '.join(missing)}; expected a spectune export")
    return frame  # columns the store does not know are dropped when the rows are inserted


def _check(folder: Path, tables: dict[str, pl.DataFrame]) -> None:
    cells = tables["cells"]
    for col in ("run_id", "cell_id", "method", "status"):
        if cells[col].null_count():
            row = int(cells[col].is_null().arg_true()[0])
            raise InputError(folder / "cells.parquet", 0, f"row {row}: {col} is null")
    dup = cells.select("run_id", "cell_id").is_duplicated()
    if dup.any():
        raise InputError(folder / "cells.parquet", 0, f"row {int(dup.arg_true()[0])}: duplicate (run_id, cell_id)")
    runs = tables.get("runs")
    known = set(runs["run_id"].to_list()) if runs is not None else set()
    orphan = cells.filter(~pl.col("run_id").is_in(list(known)))
    if orphan.height:
        raise InputError(folder / "cells.parquet", 0, f"cells of run {orphan['run_id'][0]!r} have no row in "
                         "runs.parquet; expected a complete export")
    bad = cells.filter(~pl.col("status").is_in(["ok", "failed"]))
    if bad.height:
        raise InputError(folder / "cells.parquet", 0, f"status {bad['status'][0]!r}; expected ok or failed")
    keys = cells.select("run_id", "cell_id")
    new_run = (pl.col("run_id") != pl.col("run_id").shift()) | (pl.col("cell_id") != pl.col("cell_id").shift())
    for name in ("positions", "requests", "model_draws"):
        if name in tables and tables[name].height:
            # a cell's rows come together: check the first row of each run of equal keys (rows counted on failure)
            firsts = tables[name].select("run_id", "cell_id").filter(new_run.fill_null(True))
            if firsts.join(keys, on=["run_id", "cell_id"], how="anti").height:
                stray = tables[name].join(keys, on=["run_id", "cell_id"], how="anti")
                raise InputError(folder / f"{name}.parquet", 0, f"{stray.height} rows belong to no cell in "
                                 "cells.parquet")


def folder_hash(folder: Path) -> str:
    h = hashlib.sha256()
    for name in TABLES:
        for path in table_files(folder, name):  # a whole table hashes as before; parts by name and content
            key = name if path.name == f"{name}.parquet" else path.name
            h.update(f"{key}:{sha256_file(path)}\n".encode())
    return h.hexdigest()


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    folder = folder_of(path)
    if folder is None:
        raise InputError(path, 0, "expected a spectune export folder (runs.parquet, cells.parquet, ...)")
    if opts.overrides:
        raise UsageError("--set does not apply to spectune Parquet exports (their cells carry every dimension)")
    tables: dict[str, pl.DataFrame] = {}
    for name in TABLES:
        frame = _read_table(folder, name)
        if frame is not None:
            tables[name] = frame
    if "runs" not in tables:
        raise InputError(folder / "runs.parquet", 0, "missing; expected a complete export (runs, cells, ...)")
    _check(folder, tables)
    if "requests" in tables and tables["requests"].height:
        tables["cell_bootstrap"] = store.bootstrap_frames(tables["cells"], tables["requests"],
                                                          tables.get("model_draws"))
    file_hash = folder_hash(folder)
    runs = sorted(set(tables["cells"]["run_id"].to_list()))
    backends = sorted(set(tables["runs"]["backend"].to_list()))
    notes = f"spectune export of runs {', '.join(runs)} (backends {', '.join(backends)})"
    parsed = ParsedFile(path=folder, format=FORMAT, file_hash=file_hash, tables=tables,
                        run=import_run(folder, FORMAT, file_hash, notes=notes))
    parsed.summary = {"runs": runs, "backends": backends}
    return parsed


def export_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str], out: Path) -> dict[str, Any]:
    """Write the given runs' rows as an export folder; returns rows per table."""
    have = set(sql.frame(con, "SELECT run_id FROM runs")["run_id"].to_list())
    missing = [r for r in run_ids if r not in have]
    if missing:
        raise UsageError(f"no such run: {', '.join(missing)}")
    out.mkdir(parents=True, exist_ok=True)
    tables = store.export_tables(con, run_ids)
    rows, parts = {}, {}
    for name in TABLES:
        parts[name] = write_table(tables[name], out, name)
        rows[name] = tables[name].height
    return {"out": str(out), "runs": run_ids, "rows": rows, "files": parts}


def write_table(frame: pl.DataFrame, out: Path, name: str) -> int:
    """Write one table as ``NAME.parquet``, or as parts when that file would be over the import cap in force
    (each part at most half the cap by rows, re-split until every part fits); returns the number of files."""
    cap = caps.limit(caps.IMPORT_CAP)
    for stale in [out / f"{name}.parquet", *out.glob(f"{name}.part-*.parquet")]:
        stale.unlink(missing_ok=True)
    whole = out / f"{name}.parquet"
    frame.write_parquet(whole, compression="zstd")
    size = whole.stat().st_size
    if size <= cap:
        return 1
    whole.unlink()
    n = max(2, -(-size // max(1, cap // 2)))
    while True:
        per = max(1, -(-frame.height // n))
        paths = []
        for i, start in enumerate(range(0, max(frame.height, 1), per)):
            path = out / f"{name}.part-{i:05d}.parquet"
            frame.slice(start, per).write_parquet(path, compression="zstd")
            paths.append(path)
        if all(p.stat().st_size <= cap for p in paths):
            return len(paths)
        for p in paths:
            p.unlink()
        if per == 1:
            raise UsageError(f"one {name} row is over the {cap}-byte import limit; raise it with --max-file-bytes SIZE "
                         "or $SPECTUNE_MAX_FILE_BYTES")
        n *= 2
