"""The embedded default data: a simulated run of the default matrix, committed as Parquet under data/default/,
and the published cells of data/published/ (ingest/published_default.py) imported beside it.

On first use of the default store path the DuckDB file is built from those files (bootstrap replicates are
recomputed, deterministically, rather than shipped, and multiplied by the shipped model-draw factors), into a
temporary file that is renamed into place, under
a file lock so two processes never build it at once. ``scripts/build_default_data.py`` regenerates the Parquet.

When the Parquet changes later (a ``git pull``, a regeneration), :func:`refresh_if_stale` replaces the default
runs in the existing store and keeps every other run a user landed there. The check on every open is cheap: a
sidecar file (``<store>.default-stamp``) holds the files' sizes and mtimes; only when they differ is the
content hashed and compared with the hash the store recorded (meta ``default_data_sha256``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
from pathlib import Path

import polars as pl

from ingest import ddl, paths, published_default, sql, store

DEFAULT_DIR = paths.DATA_DIR / "default"
TABLES = ("runs", "cells", "positions", "requests", "model_draws")
HASH_KEY = "default_data_sha256"


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


def content_hash(folder: Path = DEFAULT_DIR) -> str:
    h = hashlib.sha256()
    for name in TABLES:
        target = folder / f"{name}.parquet"
        if target.exists():
            h.update(name.encode())
            h.update(target.read_bytes())
    published_default.update_hash(h)
    return h.hexdigest()


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".default-stamp")


def _write_stamp(path: Path, stamp: str) -> None:
    with contextlib.suppress(OSError):  # a read-only folder: the content check runs again next time, nothing worse
        stamp_path(path).write_text(stamp)


def refresh_if_stale(path: Path, folder: Path | None = None) -> bool:
    """Replace the default runs of the store at ``path`` when the default Parquet changed since it was built.

    Only a store that holds the default runs (or records their hash) is touched; other runs stay. Returns
    True when the store was refreshed."""
    folder = DEFAULT_DIR if folder is None else folder
    stamp = files_stamp(folder)
    try:
        if stamp_path(path).read_text() == stamp:
            return False
    except OSError:
        pass
    digest = content_hash(folder)
    default_runs = pl.read_parquet(folder / "runs.parquet")["run_id"].to_list() if (
        folder / "runs.parquet").exists() else []
    try:
        with contextlib.closing(store.connect(path, read_only=True, refresh_default=False, wait_s=2.0)) as ro:
            recorded = sql.one(ro, "SELECT value FROM meta WHERE key = ?", [HASH_KEY])
            held = sql.one(ro, "SELECT count(*) FROM runs WHERE run_id IN (SELECT unnest(?))", [default_runs])[0]
        if (recorded and recorded[0] == digest) or (not recorded and not held):
            _write_stamp(path, stamp)  # unchanged, or not a store built from the default data: never ours to change
            return False
        con = store.connect(path, read_only=False, refresh_default=False, wait_s=2.0)
    except store.StoreLockedError:
        print(f"note: the embedded default data may have changed, but {path} is open in another process; its "
              "default runs are checked again on the next start", file=sys.stderr)
        return False
    try:
        with store.transaction(con):
            replaced = [*default_runs, *published_default.run_ids(con)]
            for table, columns in ddl.COLUMNS.items():
                if "run_id" in columns:
                    con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT unnest(?))", [replaced])
        tables = read_default_tables(folder)
        if tables:
            store.write_tables_bulk(con, tables)
        published_default.import_into(con)
        con.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [HASH_KEY, digest])
        con.execute("CHECKPOINT")
    finally:
        con.close()
    _write_stamp(path, stamp)
    print(f"note: the embedded default data changed; refreshed its runs in {path} (other runs kept)",
          file=sys.stderr)
    return True


def _compact_requests(requests: pl.DataFrame) -> pl.DataFrame:
    """Committed form: latencies quantised to 0.01 ms as integers, TPOT/ok/error dropped (derivable)."""
    return requests.select(
        "run_id", "cell_id", pl.col("request_index").cast(pl.Int16),
        pl.col("input_tokens").cast(pl.Int16), pl.col("output_tokens").cast(pl.Int16),
        (pl.col("ttft_ms") * 100).round().cast(pl.Int32).alias("ttft_cms"),
        (pl.col("e2e_ms") * 100).round().cast(pl.Int32).alias("e2e_cms"),
        (pl.col("start_s") * 1e5).round().cast(pl.Int64).alias("start_cms"),
        pl.col("drafted_tokens").cast(pl.Int32), pl.col("accepted_tokens").cast(pl.Int32),
    )


def _expand_requests(compact: pl.DataFrame) -> pl.DataFrame:
    ttft = pl.col("ttft_cms") / 100.0
    e2e = pl.col("e2e_cms") / 100.0
    out = pl.col("output_tokens")
    return compact.select(
        "run_id", "cell_id", pl.col("request_index").cast(pl.Int32), pl.col("input_tokens").cast(pl.Int32),
        out.cast(pl.Int32), ttft.alias("ttft_ms"),
        pl.when(out > 1).then((e2e - ttft) / (out - 1)).otherwise(None).alias("tpot_ms"), e2e.alias("e2e_ms"),
        (pl.col("start_cms") / 1e5).alias("start_s"), pl.col("drafted_tokens").cast(pl.Float64),
        pl.col("accepted_tokens").cast(pl.Float64), pl.lit(True).alias("ok"), pl.lit(None, pl.String).alias("error"),
    )


def read_default_tables(folder: Path = DEFAULT_DIR) -> dict[str, pl.DataFrame]:
    tables = {t: pl.read_parquet(folder / f"{t}.parquet") for t in TABLES if (folder / f"{t}.parquet").exists()}
    if "requests" in tables:
        tables["requests"] = _expand_requests(tables["requests"])
    if "model_draws" in tables:
        tables["model_draws"] = tables["model_draws"].with_columns(pl.col(pl.Float32).cast(pl.Float64))
    return tables


def build_default_db(path: Path, folder: Path = DEFAULT_DIR) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_suffix(path.suffix + ".lock")
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if path.exists():  # another process built it while we waited
                return
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.unlink(missing_ok=True)
            con = sql.quiet_connect(str(tmp))
            try:
                store.ensure_schema(con, tmp)
                tables = read_default_tables(folder)
                if tables:
                    store.write_tables_bulk(con, tables)
                published_default.import_into(con)  # the published cells beside the simulated matrix
                con.execute("INSERT INTO meta VALUES (?, ?)", [HASH_KEY, content_hash(folder)])
                con.execute("CHECKPOINT")
            finally:
                con.close()
            os.replace(tmp, path)
            _write_stamp(path, files_stamp(folder))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    lock_path.unlink(missing_ok=True)


def write_default_tables(tables: dict[str, pl.DataFrame], folder: Path = DEFAULT_DIR) -> dict[str, int]:
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for name in TABLES:
        target = folder / f"{name}.parquet"
        frame = _compact_requests(tables[name]) if name == "requests" else tables[name]
        if name == "model_draws":  # factors near 1: 5 decimals in float32 are exact enough and compress well
            frame = frame.with_columns(pl.col(pl.Float64).round(5).cast(pl.Float32), pl.col("replicate").cast(pl.Int16))
        frame.write_parquet(target, compression="zstd", compression_level=19, statistics=False)
        sizes[name] = target.stat().st_size
    return sizes
