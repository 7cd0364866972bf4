"""Re-scoring buckets straight from trace files in bounded memory: one streaming pass per file, then a merge.

Owns the streaming re-score read (issue 16). A trace is one file, a folder of files or a glob (a day per
file). Each file is reduced on its own (:func:`reduce_file`, also what a Ray task runs) to *partial
buckets*: request counts and token sums per ``shard × workload × time bucket × length bucket`` as read
(shard and workload not yet decided), plus the checks' tallies (rows flagged bad, missing timestamps,
dropped rows, how far arrivals go back in time). The partials of all files are summed on the driver
and finished into the same :class:`~analysis.rescore.trace.TraceBuckets` that
:func:`~analysis.rescore.trace.bucketize` builds from an in-memory frame — identical numbers, without
the request list ever existing.

One pass, not two: time buckets need the trace's first and last arrival before grouping, so the
driver guesses both cheaply (the first rows of the first file, the last rows of the last file) and
each file's pass groups with the guessed grid while also computing the true minimum and maximum.
When the guess was right (any trace in time order) that pass is final; otherwise the files are
grouped once more with the true grid. A file the streaming path cannot read or whose pass flags a
bad value is read by the exact reader (:func:`ingest.traces.read_trace`), which raises the one-line
``file:line`` error — or, when it accepts the file after all, supplies its rows.
"""

from __future__ import annotations

import glob
import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from analysis.rescore.shard import key_expr
from analysis.rescore.trace import (
    MAX_TIME_BUCKETS,
    MIN_BUCKET_S,
    SHARD_BY,
    UNKNOWN,
    TraceBuckets,
    _cap_shards,
    length_bucket,
)
from analysis.rescore.workload import WorkloadSource, assign_file
from ingest.errors import InputError
from ingest.trace_store import trace_id_for
from ingest.traces import read_trace
from ingest.traces.detect import detect_kind
from ingest.traces.lazy import finish_labels, lazy_trace
from ingest.traces.limits import DEFAULT_LIMITS, Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.registry import NAME_HINTS, check_request
from ingest.traces.source import GZIP_MAGIC, HEAD_BYTES, PARQUET_MAGIC, Source, open_source

YEAR_S = 365.25 * 86_400
KEYS = ["shard", "workload", "t", "lb"]
# shard kinds the partial buckets can key (output_length and hour need per-request values: exact reader)
STREAMED_SHARDS = ("auto", "workload", "column", "none")
GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class ReadSpec:
    """How to read every file of a trace (the CLI's --format, --map, --timestamp-unit, --workload).

    ``workload`` is the selector (analysis.rescore.workload): in a format whose reader guesses the workload
    from the file name it labels every request instead of the guess; elsewhere it fills the requests the file
    leaves unlabelled."""

    fmt: str = "auto"
    mapping: TraceMapping | None = None
    workload: str | None = None
    limits: Limits = DEFAULT_LIMITS


@dataclass(frozen=True, slots=True)
class Grid:
    """Time buckets of the whole trace: ``floor((ts - t0) / bucket_s)`` clipped to ``n_buckets``."""

    t0: float
    bucket_s: float
    n_buckets: int


def grid_for(t0: float, t1: float) -> Grid:
    """The grid :func:`analysis.rescore.trace.bucketize` uses for arrivals from ``t0`` to ``t1``."""
    duration = float(t1 - t0)
    bucket_s = max(min(MIN_BUCKET_S, duration), duration / MAX_TIME_BUCKETS) if duration > 0 else 1.0
    return Grid(t0, bucket_s, max(1, math.ceil(duration / bucket_s - 1e-9)) if duration > 0 else 1)


@dataclass(slots=True)
class FilePartial:
    """One file reduced: kept requests' partial buckets and what the checks found."""

    path: str
    name: str
    format: str
    file_hash: str
    rows: pl.DataFrame  # shard, workload (as read; null kept), t, lb, n, out_sum, in_sum, c_n, c_drafted, c_accepted
    requests: int
    dropped: dict[str, int]
    ts_min: float | None  # raw seconds (not rebased); None: the file has no arrival times
    ts_max: float | None
    grid: Grid | None  # the grid ``rows.t`` was computed with
    warnings: list[str]
    workload_assignment: dict[str, int]
    exact: bool = False  # read by the exact reader (its times already rebased to the file's first request)
    # which source labelled how many requests (analysis.rescore.workload.SOURCES); "selector" counts requests
    # the file left unlabelled, filled with ReadSpec.workload when the partials are merged
    source_counts: dict[str, int] = field(default_factory=dict)
    name_guess: str | None = None


def trace_files(arg: str) -> list[Path] | None:
    """The files of a trace argument: a file (itself), a folder (its visible files, by name) or a glob;
    None when ``arg`` is none of these (it may be a stored trace id)."""
    path = Path(arg)
    try:
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if not p.name.startswith(".") and p.is_file())
            if not files:
                raise InputError(path, 0, "not a regular file (an empty folder); expected a trace file or a folder "
                                          "of trace files")
            return files
        if path.exists():
            return [path]
    except OSError:
        return None
    if GLOB_CHARS & set(arg):
        files = sorted(Path(p) for p in glob.glob(arg) if Path(p).is_file())
        if not files:
            raise InputError(path, 0, "no files match this pattern")
        return files
    return None


# A Parquet file is reduced about this many rows (whole row groups) at a time. The peak follows the slice, not
# the file: read alone, a 100 M-row file (1 M-row groups) peaked at 714–771 MB with 10 M-row slices, 586–605 MB
# with 5 M, 425 MB with 2.5 M (a 10 M-row file: 388 MB) at the same speed; 1 M-row slices cost ~15 % more time.
SLICE_ROWS = 2_500_000
SUMMED = ("n", "out_sum", "in_sum", "c_n", "c_drafted", "c_accepted", "ts_missing", "late")


def _stream_rows(lf: pl.LazyFrame, grid: Grid | None, slices: Sequence[tuple[int, int]] = (),
                 labels: Sequence[str] = ("workload", "shard")) -> pl.DataFrame:
    """The one streaming pass over a file's requests (columns of ingest.traces.lazy.COLUMNS). Dropped and
    flagged rows keep their labels as read, so that every distinct label is in the result for
    ingest.traces.lazy.finish_labels to check.

    ``slices`` ((offset, rows) in file order, covering the file): the pass runs one slice after another, the
    running maximum arrival carried over, and their groups are summed. Why: the time-order check is a running
    maximum, which the streaming engine computes in row order, so faster parallel reading upstream would
    queue ever more of a large file's row groups in memory (2.1 GB at 100 M rows in one query); a slice at a
    time keeps it at one slice's worth.

    ``labels``: the label columns the file has; the others are all null and are not grouped by (hashing a
    constant key costs ~0.2 s CPU per 10 M rows)."""
    if len(slices) > 1:
        parts, carry = [], None
        for offset, rows in slices:
            g = _stream_rows_once(lf.slice(offset, rows), grid, carry, labels)
            parts.append(g)
            top = g.filter(pl.col("kind") == 0)["ts_max"].max()
            carry = top if carry is None or (top is not None and top > carry) else carry  # type: ignore[operator]
        c = pl.col
        return pl.concat(parts).group_by(["kind", *KEYS]).agg(
            *(c(k).sum() for k in SUMMED), c("ts_min").min(), c("ts_max").max(), c("back").max())
    return _stream_rows_once(lf, grid, None, labels)


def _stream_rows_once(lf: pl.LazyFrame, grid: Grid | None, carry: float | None,
                      labels: Sequence[str] = ("workload", "shard")) -> pl.DataFrame:
    c = pl.col
    kind = (pl.when(c("bad")).then(3).when(c("output_tokens") == 0).then(1).when(c("input_tokens") == 0).then(2)
            .otherwise(0).cast(pl.Int8))
    lf = lf.with_columns(kind.alias("kind"))
    kept = c("kind") == 0
    tsk = pl.when(kept).then(c("ts"))
    lf = lf.with_columns(tsk.alias("tsk"))
    t = ((((c("tsk") - grid.t0) / grid.bucket_s).floor().cast(pl.Int32).clip(0, grid.n_buckets - 1))
         if grid is not None else pl.lit(0, pl.Int32))
    both = c("drafted_tokens").is_not_null() & c("accepted_tokens").is_not_null()
    running = c("tsk").cum_max() if carry is None else pl.max_horizontal(c("tsk").cum_max(), pl.lit(carry))
    lf = lf.with_columns((running - c("tsk")).alias("back"),
                         pl.when(kept).then(t).alias("t"),
                         pl.when(kept).then(length_bucket(c("output_tokens"))).alias("lb"))
    keys = [k for k in KEYS if k in labels or k not in ("shard", "workload")]
    g = lf.group_by(["kind", *keys]).agg(
        pl.len().cast(pl.Int64).alias("n"), c("output_tokens").sum().alias("out_sum"),
        c("input_tokens").sum().alias("in_sum"), both.sum().cast(pl.Int64).alias("c_n"),
        pl.when(both).then(c("drafted_tokens")).sum().alias("c_drafted"),
        pl.when(both).then(c("accepted_tokens")).sum().alias("c_accepted"),
        c("tsk").min().alias("ts_min"), c("tsk").max().alias("ts_max"),
        c("ts_missing").sum().cast(pl.Int64).alias("ts_missing"), c("back").max().alias("back"),
        (c("back") > 0).sum().cast(pl.Int64).alias("late"),
    ).collect(engine="streaming")
    absent = [k for k in KEYS if k not in keys]
    if not absent:
        return g
    aggregates = g.columns[1 + len(keys):]
    return g.with_columns(pl.lit(None, pl.String).alias(k) for k in absent).select("kind", *KEYS, *aggregates)


def _tally(g: pl.DataFrame, *, has_ts_column: bool, required_ts: bool, limits: Limits
           ) -> tuple[dict, list[str]] | None:
    """Checks that need the whole file (None: the exact reader must decide), and the normaliser's warnings."""
    total = int(g["n"].sum())
    kept = g.filter(pl.col("kind") == 0)
    if total == 0 or (g["kind"] == 3).any() or kept.height == 0:
        return None
    missing = int(g["ts_missing"].sum())
    has_ts = has_ts_column and not (missing == total and not required_ts)
    if has_ts and missing:
        return None
    per_kind = dict(g.group_by("kind").agg(pl.col("n").sum()).iter_rows())
    dropped = {r: int(per_kind[k]) for r, k in (("zero_output_tokens", 1), ("zero_input_tokens", 2))
               if per_kind.get(k, 0) > 0}
    out = {"requests": int(kept["n"].sum()), "dropped": dropped, "ts_min": None, "ts_max": None}
    warnings: list[str] = []
    if has_ts:
        worst = float(kept["back"].max())  # type: ignore[arg-type]
        if worst > limits.max_backwards_s:
            return None
        if worst > 0:
            warnings.append(f"{int(kept['late'].sum())} requests were out of time order (by at most {worst:.3f} s) "
                            "and were sorted by timestamp")
        out["ts_min"], out["ts_max"] = float(kept["ts_min"].min()), float(kept["ts_max"].max())  # type: ignore
        span = out["ts_max"] - out["ts_min"]
        if span > limits.warn_span_s:
            warnings.append(f"requests span {span / YEAR_S:,.1f} years from first to last arrival; real traces "
                            "cover hours to weeks: check the timestamp column and its unit")
    return out, warnings


def _partial(g: pl.DataFrame, tally: dict, grid: Grid | None, **meta) -> FilePartial:
    rows = g.filter(pl.col("kind") == 0).drop("kind", "ts_min", "ts_max", "ts_missing", "back", "late")
    n_null = int(rows.filter(pl.col("workload").is_null())["n"].sum())
    selector, by_name = meta.pop("selector", None), meta.pop("by_name", None)
    if "source_counts" not in meta:
        labelled = tally["requests"] - n_null
        if by_name is not None:  # a name-guessed format: the selector or the file name labelled every request
            counts = {"selector": labelled} if selector else {"file name": labelled} if by_name else {}
        else:
            counts = {"file": labelled, ("selector" if selector else "unknown"): n_null}
        meta["source_counts"] = {k: v for k, v in counts.items() if v}
    n_unlabelled = 0 if selector else n_null
    assignment = {"given": tally["requests"] - n_unlabelled, "classifier": 0, "unknown": n_unlabelled}
    return FilePartial(rows=rows, requests=tally["requests"], dropped=tally["dropped"], ts_min=tally["ts_min"],
                       ts_max=tally["ts_max"], grid=grid, workload_assignment=meta.pop("assignment", assignment),
                       **meta)


def reduce_file(path: str | Path, spec: ReadSpec, grid: Grid | None, name: str | None = None) -> FilePartial:
    """One file → its partial buckets, with ``grid`` for time (None: all in bucket 0). Raises InputError."""
    path = Path(path)
    want = check_request(path, spec.fmt, spec.mapping, spec.workload)
    if _is_gzip(path):  # inflated to a temporary copy by the exact reader; read only once
        return _reduce_exact(path, spec, grid, name)
    with open_source(path, spec.limits, want) as src:
        kind = detect_kind(src, spec.mapping) if spec.fmt == "auto" else spec.fmt
        if kind != "sharegpt":
            src.check_line_cap()
        hint = NAME_HINTS.get(kind)
        guess = (hint(name or "") or hint(path.name)) if hint else None
        # name-guessed formats carry no workload: the selector, else the name's guess, labels them all; other
        # formats keep their own labels and leave the rest to the merge (the selector, else unknown)
        workload = (spec.workload or guess) if hint else None
        for general in (False, True):
            lt = lazy_trace(src, kind, spec.mapping, spec.limits, workload, general_timestamps=general)
            if lt is None:
                break
            try:
                g = finish_labels(_stream_rows(lt.frame, grid, _slices(src.data_path) if kind == "parquet" else (),
                                               lt.labels), lt.workload)
            except pl.exceptions.PolarsError:  # e.g. a malformed CSV row: the exact reader names its line
                break
            if g is None:  # a label the checks refuse: the exact reader names its line
                break
            tally = _tally(g, has_ts_column=lt.has_timestamp_column, required_ts=lt.timestamp_required,
                           limits=spec.limits)
            if tally is not None:
                out, warnings = tally
                return _partial(g, out, grid, path=str(path), name=name or path.name, format=kind,
                                file_hash=src.sha256, warnings=warnings, selector=spec.workload,
                                by_name=bool(guess) if hint else None, name_guess=guess)
            if not lt.text_datetime:  # only text date-times have a second parser to try
                break
    return _reduce_exact(path, spec, grid, name)


def _slices(path: Path) -> list[tuple[int, int]]:
    """(offset, rows) runs of whole row groups of about SLICE_ROWS rows, in file order (none when the footer
    cannot be read: the one query then meets the problem and the exact reader names it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
    except (OSError, ValueError, pa.ArrowException):
        return []
    out: list[tuple[int, int]] = []
    start = rows = 0
    for i in range(meta.num_row_groups):
        rows += meta.row_group(i).num_rows
        if rows >= SLICE_ROWS:
            out.append((start, rows))
            start, rows = start + rows, 0
    if rows:
        out.append((start, rows))
    return out


def _is_gzip(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC
    except OSError:
        return False  # open_source names the problem


def _reduce_exact(path: Path, spec: ReadSpec, grid: Grid | None, name: str | None) -> FilePartial:
    """The exact reader's rows (it raises the file:line error for a bad file), reduced the same way."""
    tf = read_trace(path, spec.fmt, spec.mapping, None, name=name, limits=spec.limits)
    frame, source = assign_file(tf.frame, tf.format, tf.name, spec.workload)
    assignment = source.assignment()
    lf = frame.lazy().select(
        pl.col("timestamp_s").alias("ts"), pl.col("input_tokens").cast(pl.Int64),
        pl.col("output_tokens").cast(pl.Int64), "workload", "shard", "drafted_tokens", "accepted_tokens",
        pl.col("timestamp_s").is_null().alias("ts_missing"), pl.lit(False).alias("bad"))
    g = _stream_rows(lf, grid)
    has_ts = frame["timestamp_s"].null_count() < frame.height
    out = {"requests": frame.height, "dropped": dict(tf.dropped),
           "ts_min": float(frame["timestamp_s"].min()) if has_ts else None,  # type: ignore[arg-type]
           "ts_max": float(frame["timestamp_s"].max()) if has_ts else None}  # type: ignore[arg-type]
    return _partial(g, out, grid, path=str(path), name=tf.name, format=tf.format, file_hash=tf.file_hash,
                    warnings=list(tf.warnings), exact=True, assignment=assignment, source_counts=dict(source.counts),
                    name_guess=source.name_guess)


def guess_grid(files: Sequence[Path], spec: ReadSpec) -> Grid | None:
    """A cheap guess at the trace's time grid: the first rows of the first file and the last rows of the
    last (no pre-scan, no full read). None when either cannot be read this way."""
    try:
        lo, hi = _edge(files[0], spec, first=True), _edge(files[-1], spec, first=False)
    except (InputError, pl.exceptions.PolarsError, OSError, ValueError, UnicodeDecodeError):
        return None
    if lo is None or hi is None or hi < lo:
        return None
    return grid_for(lo, hi)


EDGE_ROWS = 1000
TAIL_BYTES = 256 * 1024


def _edge(path: Path, spec: ReadSpec, *, first: bool) -> float | None:
    if not path.is_file():  # a FIFO or a device would block or never end: open_source refuses it later
        return None
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
        size = path.stat().st_size
        is_parquet = head.startswith(PARQUET_MAGIC)
        text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        # only well-formed text heads (a header line within them, no NUL) are guessed from, and only from
        # these bytes and the file's last bytes: a guess never reads a hostile file's middle
        if head.startswith(GZIP_MAGIC) or (not is_parquet and (b"\x00" in head or b"\n" not in text)):
            return None
        tail = b""
        if not first and not is_parquet:
            fh.seek(max(0, size - TAIL_BYTES))
            tail = fh.read(TAIL_BYTES)
    src = Source(path=path, data_path=path, sha256="", size=size, head=head, is_parquet=is_parquet,
                 has_quote=True, suffix=path.suffix.lower())
    kind = detect_kind(src, spec.mapping) if spec.fmt == "auto" else spec.fmt
    data = None
    if not is_parquet:
        header_end = len(head) - len(text) + text.find(b"\n")
        if first:
            data = head[: head.rfind(b"\n") + 1]
        else:
            cut = tail.find(b"\n") if size > len(tail) else -1  # the whole file is in the tail: keep it
            data = head[: header_end + 1] + tail[cut + 1:] if cut >= 0 or size > len(tail) else tail
    lt = lazy_trace(src, kind, spec.mapping, spec.limits, spec.workload, data=data)
    if lt is None:
        return None
    lf = lt.frame
    lf = lf.head(EDGE_ROWS) if first else lf.tail(EDGE_ROWS)
    ok = ~pl.col("bad") & (pl.col("output_tokens") > 0) & (pl.col("input_tokens") > 0)
    got = lf.filter(ok).select(pl.col("ts").min() if first else pl.col("ts").max()).collect().item()
    return None if got is None else float(got)


FileMap = Callable[[Callable[..., FilePartial], list[Path], ReadSpec, Grid | None], list[FilePartial]]


def local_map(fn: Callable[..., FilePartial], files: list[Path], spec: ReadSpec, grid: Grid | None
              ) -> list[FilePartial]:
    return [fn(p, spec, grid) for p in files]


@dataclass(slots=True)
class TraceRead:
    """The buckets of a file trace and its provenance (the re-score document's ``trace`` metadata)."""

    buckets: TraceBuckets
    meta: dict
    files: int = 1
    passes: int = 1  # 2 when the guessed time grid was wrong (out-of-order edges) or could not be guessed
    partials: list[FilePartial] = field(default_factory=list)


def read_buckets(arg: str, files: list[Path], spec: ReadSpec, shard_by: str = "auto",
                 file_map: FileMap = local_map) -> TraceRead:
    """Reduce every file (``file_map``: here, or as Ray tasks) and merge into the trace's buckets."""
    if shard_by not in SHARD_BY:
        raise ValueError(f"shard_by must be one of {', '.join(SHARD_BY)}, got {shard_by!r}")
    if shard_by not in STREAMED_SHARDS:
        raise ValueError(f"shard_by {shard_by!r} needs each request's own output length or arrival time, which the "
                         "streaming read does not keep; read the file with the exact reader")
    grid = guess_grid(files, spec)
    parts = file_map(reduce_file, files, spec, grid)
    passes = 1
    need = _needed_grid(parts)
    if need is not None and need != grid:
        parts, passes = file_map(reduce_file, files, spec, need), 2
        if _needed_grid(parts) != need:  # the files changed between the passes
            raise InputError(Path(arg), 0, "trace files changed while they were read; read them again")
    if len(parts) > 1 and any(p.exact and p.ts_min is not None for p in parts):
        bad = next(p for p in parts if p.exact and p.ts_min is not None)
        raise InputError(Path(bad.path), 0, f"format {bad.format} cannot be part of a many-file trace with arrival "
                                            "times (its times are relative to the file); re-score it on its own")
    buckets = merge(parts, shard_by, spec.workload)
    counts: dict[str, int] = {}
    for p in parts:
        for k, v in p.source_counts.items():
            counts[k] = counts.get(k, 0) + v
    source = {"source": _main_source(counts), "counts": counts, "selector": spec.workload,
              "name": parts[0].name if len(parts) == 1 else arg, "name_guess": parts[0].name_guess}
    if len(parts) == 1:
        p = parts[0]
        meta = {"trace_id": trace_id_for(p.file_hash), "name": p.name, "format": p.format,
                "file_hash": p.file_hash, "source": "file", "workload_assignment": p.workload_assignment,
                "dropped": dict(p.dropped), "warnings": list(p.warnings), "workload_source": source}
    else:
        digest = hashlib.sha256("".join(f"{Path(p.path).name}\0{p.file_hash}\n" for p in parts).encode())
        formats = sorted({p.format for p in parts})
        dropped: dict[str, int] = {}
        assignment = {"given": 0, "classifier": 0, "unknown": 0}
        for p in parts:
            for k, v in p.dropped.items():
                dropped[k] = dropped.get(k, 0) + v
            for k, v in p.workload_assignment.items():
                assignment[k] = assignment.get(k, 0) + v
        meta = {"trace_id": trace_id_for(digest.hexdigest()), "name": arg, "format": formats[0]
                if len(formats) == 1 else "mixed", "file_hash": digest.hexdigest(), "source": "files",
                "files": len(parts), "workload_assignment": assignment, "dropped": dropped,
                "warnings": [f"{p.name}: {w}" for p in parts for w in p.warnings], "workload_source": source}
    return TraceRead(buckets=buckets, meta=meta, files=len(parts), passes=passes, partials=parts)


def _main_source(counts: dict[str, int]) -> str:
    return WorkloadSource(counts).source


def _needed_grid(parts: list[FilePartial]) -> Grid | None:
    """The grid the merged trace needs (None: no time buckets at all)."""
    if any(p.ts_min is None for p in parts) or sum(p.requests for p in parts) < 2:
        return None
    t0 = min(p.ts_min for p in parts)  # type: ignore[type-var]
    t1 = max(p.ts_max for p in parts)  # type: ignore[type-var]
    return grid_for(t0, t1) if t1 > t0 else None


def merge(parts: list[FilePartial], shard_by: str = "auto", selector: str | None = None) -> TraceBuckets:
    """Sum the files' partial buckets and finish them as bucketize does (the selector labels what no file
    labelled)."""
    rows = pl.concat([p.rows for p in parts], how="vertical_relaxed")
    n = sum(p.requests for p in parts)
    if n == 0:
        raise ValueError("trace has no requests")
    grid = _needed_grid(parts)
    has_time = grid is not None
    duration = None
    if all(p.ts_min is not None for p in parts):
        duration = float(max(p.ts_max for p in parts) - min(p.ts_min for p in parts))  # type: ignore[type-var]
    if not has_time:
        rows = rows.with_columns(pl.lit(0, pl.Int32).alias("t"))
    if shard_by == "auto":
        shard_by = "column" if rows["shard"].is_not_null().any() else "workload"
    rows = rows.with_columns(pl.col("workload").fill_null(selector.strip().lower() if selector else UNKNOWN))
    counters = (rows.filter(pl.col("c_n") > 0).group_by("workload")
                .agg(pl.col("c_n").sum().cast(pl.UInt32).alias("requests"), pl.col("c_drafted").sum().alias("drafted"),
                     pl.col("c_accepted").sum().alias("accepted")))
    rows = rows.with_columns(key_expr(shard_by).alias("shard")).group_by(KEYS).agg(
        pl.col("n").sum().cast(pl.UInt32), pl.col("out_sum", "in_sum").sum())
    rows = rows.select(pl.col("shard").cast(pl.String), pl.col("t").cast(pl.Int32), "workload",
                       pl.col("lb").cast(pl.Int16), "n", pl.col("out_sum").cast(pl.Int64),
                       pl.col("in_sum").cast(pl.Int64))
    rows, shards = _cap_shards(rows)
    bucket_s = grid.bucket_s if grid else 1.0
    n_buckets = grid.n_buckets if grid else 1
    lengths = np.full(n_buckets, bucket_s)
    if has_time and duration is not None:
        lengths[-1] = duration - (n_buckets - 1) * bucket_s
    return TraceBuckets(rows=rows.sort(["shard", "t", "workload", "lb"]), requests=n,
                         shards=shards, shard_by=shard_by, has_time=has_time,
                        duration_s=duration, bucket_s=bucket_s, bucket_len=lengths,
                        counters=counters.select("workload", "requests", pl.col("drafted").cast(pl.Int64),
                                                 pl.col("accepted").cast(pl.Int64)).sort("workload"))
