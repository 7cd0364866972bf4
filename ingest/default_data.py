"""The embedded default data: a simulated run of the default matrix, committed as Parquet under data/default/,
and the published cells of data/published/ (ingest/published_default.py) imported beside it.

On first use of the default store path the DuckDB file is built from those files (bootstrap replicates are
recomputed, deterministically, rather than shipped, and multiplied by the shipped model-draw factors), in a private
temporary folder beside it and renamed into place, under a file lock (``<store>.lock``) so two processes never build
it at once; each step is reported as it starts (a CLI shows it on stderr, the dashboard in a status box).
``scripts/build_default_data.py`` regenerates the Parquet.

When the Parquet changes later (a ``git pull``, a regeneration), :func:`refresh_if_stale` replaces the default
runs in the existing store and keeps every other run a user landed there. The check on every open is cheap
(ingest/default_stamp.py, called by ingest/open_store.py, which imports this module only when the default store is
missing or its stamp differs): a sidecar file (``<store>.default-stamp``) holds the files' sizes and mtimes; only
when they differ is the content hashed and compared with the hash the store recorded (meta
``default_data_sha256``). The stamp and the lock are made and read through ingest/safefile.py: a link, FIFO or
device at their names is never followed or read (a bad stamp is ignored with one warning; a bad lock is an error,
since two builds must not race). The published folders are landed here (:func:`import_published`) through the same
result readers and landing as ``python -m ingest results FOLDER``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import polars as pl

from ingest import ddl, default_stamp, published_default, safefile, sql, store
from ingest.default_stamp import DEFAULT_DIR, TABLES
from ingest.errors import UsageError
from ingest.results import read_files
from ingest.results.land import land
from ingest.results.published_cells import folder_files

HASH_KEY = "default_data_sha256"


def content_hash(folder: Path = DEFAULT_DIR) -> str:
    h = hashlib.sha256()
    for name in TABLES:
        target = folder / f"{name}.parquet"
        if target.exists():
            h.update(name.encode())
            h.update(target.read_bytes())
    published_default.update_hash(h)
    return h.hexdigest()


def refresh_if_stale(path: Path, folder: Path | None = None) -> bool:
    """Replace the default runs of the store at ``path`` when the default Parquet changed since it was built.

    Only a store that holds the default runs (or records their hash) is touched; other runs stay. Returns
    True when the store was refreshed."""
    folder = default_stamp.DEFAULT_DIR if folder is None else folder
    stamp = default_stamp.files_stamp(folder)
    if default_stamp.read_stamp(path) == stamp:
        return False
    digest = content_hash(folder)
    default_runs = pl.read_parquet(folder / "runs.parquet")["run_id"].to_list() if (
        folder / "runs.parquet").exists() else []
    try:
        with contextlib.closing(store.connect(path, read_only=True, wait_s=2.0)) as ro:
            recorded = sql.one(ro, "SELECT value FROM meta WHERE key = ?", [HASH_KEY])
            held = sql.one(ro, "SELECT count(*) FROM runs WHERE run_id IN (SELECT unnest(?))", [default_runs])[0]
        if (recorded and recorded[0] == digest) or (not recorded and not held):
            # unchanged, or not a store built from the default data: never ours to change
            default_stamp.write_stamp(path, stamp)
            return False
        con = store.connect(path, read_only=False, wait_s=2.0)
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
        import_published(con)
        con.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [HASH_KEY, digest])
        con.execute("CHECKPOINT")
    finally:
        con.close()
        store.clear_holder(path)
    default_stamp.write_stamp(path, stamp)
    print(f"note: the embedded default data changed; refreshed its runs in {path} (other runs kept)",
          file=sys.stderr)
    return True


def published_folders(root: Path | None = None) -> list[Path]:
    """The shipped source folders (each holds a cells table), in name order."""
    root = published_default.PUBLISHED_DIR if root is None else root
    return sorted(p for p in root.iterdir() if p.is_dir() and folder_files(p)) if root.is_dir() else []


def import_published(con: duckdb.DuckDBPyConnection, root: Path | None = None) -> int:
    """Land every shipped folder in the open store (a file already there adds nothing); returns cells added."""
    dirs = published_folders(root)
    if not dirs:
        return 0
    return sum(r["rows"] for r in land(con, read_files(dirs)))


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


Progress = Callable[[int, int, str], None]  # (step, of steps, what is being done): a first build says what it does
BUILD_STEPS = 4


def build_default_db(path: Path, folder: Path = DEFAULT_DIR, *, progress: Progress | None = None) -> None:
    """Build the default store at ``path`` from the Parquet in ``folder`` (under a lock; nothing when another
    process built it meanwhile). ``progress`` hears of each step as it starts (:func:`stderr_progress` for a CLI)."""
    say = progress or (lambda step, steps, text: None)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    lock = _open_lock(lock_path)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():  # another process built it while we waited
            return
        # The store is made in a private folder (mkdtemp: 0700, a fresh name) beside its final place, so no link
        # or FIFO someone left at a fixed temp name is ever followed; one rename puts it in place.
        work = Path(tempfile.mkdtemp(prefix=f".{path.name}.build-", dir=path.parent))
        try:
            tmp = work / "store.duckdb"
            say(1, BUILD_STEPS, f"reading the embedded data ({folder})")
            con = sql.quiet_connect(str(tmp))
            try:
                store.ensure_schema(con, tmp)
                tables = read_default_tables(folder)
                cells = tables["cells"].height if "cells" in tables else 0
                say(2, BUILD_STEPS, f"computing bootstrap replicates and writing {cells} cells")
                if tables:
                    store.write_tables_bulk(con, tables)
                say(3, BUILD_STEPS, "importing the published cells (data/published/) and checkpointing the store")
                import_published(con)  # the published cells beside the simulated matrix
                con.execute("INSERT INTO meta VALUES (?, ?)", [HASH_KEY, content_hash(folder)])
                con.execute("CHECKPOINT")
            finally:
                con.close()
            os.replace(tmp, path)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        default_stamp.write_stamp(path, default_stamp.files_stamp(folder))
        say(4, BUILD_STEPS, f"default store ready: {path}")
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        _remove_lock(lock_path, lock)
        os.close(lock)


def _open_lock(lock_path: Path) -> int:
    """The build lock's descriptor: a regular file opened without following a link, never truncated, never
    blocking on a FIFO. Anything else at the name is an error (the lock is needed: two builds must not race)."""
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise UsageError(f"{lock_path}: cannot be used as the build lock ({exc.strerror}); remove it") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UsageError(f"{lock_path}: is {safefile.describe(mode)}, not a regular file; remove it")
    return fd


def _remove_lock(lock_path: Path, fd: int) -> None:
    """Remove the lock file only when the name still holds the very file this process locked."""
    try:
        mine, now = os.fstat(fd), os.stat(lock_path, follow_symlinks=False)
        if (mine.st_dev, mine.st_ino) == (now.st_dev, now.st_ino):
            os.unlink(lock_path)
    except OSError:
        pass


@contextlib.contextmanager
def stderr_progress(path: Path) -> Iterator[Progress]:
    """A first build's progress on stderr, shown at once: a rich bar on a terminal, else one line per step
    (stdout stays the command's JSON)."""
    started = time.monotonic()
    if not sys.stderr.isatty():
        def line(step: int, steps: int, text: str) -> None:
            print(f"first start: building the default store [{step}/{steps}, {time.monotonic() - started:.1f} s] "
                  f"{text}", file=sys.stderr, flush=True)
        yield line
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("first start:"), BarColumn(bar_width=12), TimeElapsedColumn(),
                  TextColumn("{task.description}"),
                  console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task("", total=BUILD_STEPS)

        def update(step: int, steps: int, text: str) -> None:
            bar.update(task, completed=step - 1 if step < steps else steps, total=steps, description=text)
        yield update


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
