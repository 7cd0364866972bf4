"""The validating trace query: a pre-scanned file as one lazy polars query that checks as it reads.

Owns the per-request expressions of the trace readers' one pipeline. For the formats whose rows are plain
columns (Azure, BurstGPT, generic CSV and generic Parquet without prompt text) :func:`lazy_trace` builds a
``pl.LazyFrame`` that reads only the needed columns and computes, per request, the very values
:mod:`ingest.traces.normalise` would (same checks, same casts, timestamps parsed once with the file's
known layout by :func:`ingest.traces.timeparse.fast_datetime_expr`) plus a ``bad`` flag that is true
where any of those checks fails. Labels (workload, shard) stay raw text per request and are trimmed, checked
and lower-cased by :func:`finish_labels`. Two consumers, one query: :func:`normalised` collects it into the
normalised frame (``ingest trace``, the dashboard, ``read_trace``), and re-scoring aggregates it in the
streaming engine (analysis.rescore.reduce), so memory follows the aggregates, not the requests.

The flag only has to be *safe*: when any row is flagged, the exact parse (the format's reader in
:mod:`ingest.traces.registry` and :func:`ingest.traces.normalise.normalise`) reads the file to name the file,
the line and the problem — so every error message is the exact parse's, and a clean file's numbers are the
ones it would give (checked on the test corpus: same frames, same errors). It also decides the rare values
this query leaves to it (``12.0`` as a count, a date-time layout the fast parsers do not take). Files this
query does not cover (JSON formats, prompt text to classify or count, ``.gz``, an unresolved ``auto``
timestamp unit) return ``None`` and take the exact parse, their one reader.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import polars as pl

from ingest.traces.blanklines import COMPACT_ABOVE
from ingest.traces.checks import LABEL_FORBIDDEN, MAX_ABS_SECONDS, MAX_LABEL_CHARS, UNIT_SCALE
from ingest.traces.csvread import CsvHeader, read_header
from ingest.traces.generic import resolve_mapping
from ingest.traces.limits import Limits
from ingest.traces.mapping import AUTO_UNIT, TraceMapping
from ingest.traces.normalise import COUNTER_LIMIT_FACTOR
from ingest.traces.parquet import type_problem
from ingest.traces.schema import TRACE_SCHEMA
from ingest.traces.source import Source
from ingest.traces.timeparse import datetime_seconds, fast_datetime_expr, parse_datetime_seconds, strict_datetime_expr

STREAMABLE = frozenset({"azure", "burstgpt", "csv", "parquet"})
FIXED = {  # format -> (columns, timestamp unit); both required by the format
    "azure": ({"timestamp": "TIMESTAMP", "input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"},
              "datetime"),
    "burstgpt": ({"timestamp": "Timestamp", "input_tokens": "Request tokens", "output_tokens": "Response tokens",
                  "shard": "Model"}, "s"),
}
COUNT_FIELDS = frozenset({"input_tokens", "output_tokens", "drafted_tokens", "accepted_tokens"})
COLUMNS = ("ts", "input_tokens", "output_tokens", "workload", "shard", "drafted_tokens", "accepted_tokens",
           "ts_missing", "bad")


@dataclass(frozen=True, slots=True)
class LazyTrace:
    """One file as a lazy query: ``frame`` has :data:`COLUMNS` (``ts``: raw epoch-ish seconds, not rebased;
    ``workload`` and ``shard``: the raw text, for :func:`finish_labels` after grouping)."""

    frame: pl.LazyFrame
    format: str
    timestamp_required: bool
    has_timestamp_column: bool
    text_datetime: bool = False  # timestamps are date-time text (the general parser may accept more rows)
    workload: str | None = None  # fills unlabelled requests (finish_labels)
    labels: tuple[str, ...] = ("workload", "shard")  # label columns the file has (the others are all null)


# Each check runs in two steps so that no value is parsed twice: ``first`` computes the parsed columns
# (named ``__<field>_<part>``) from the raw text once, ``then`` reads only those columns.
Step = tuple[dict[str, pl.Expr], pl.Expr, pl.Expr]  # (first columns, value, bad)


def _parts(fld: str, part: str) -> str:
    return f"__{fld}_{part}"


def _missing_and_number(fld: str, dtype: pl.DataType, whole: bool = False) -> dict[str, pl.Expr]:
    """Missing flag and number; ``whole``: text must be a plain integer (anything else — spaces, ``12.0`` —
    comes out null and flags the row, so the exact reader, which accepts those, decides the file)."""
    c = pl.col(fld)
    if dtype == pl.String and whole:
        return {_parts(fld, "miss"): c.is_null() | (c == ""), _parts(fld, "num"): c.cast(pl.Int64, strict=False)}
    if dtype == pl.String:
        text = c.str.strip_chars()
        return {_parts(fld, "miss"): text.is_null() | (text == ""), _parts(fld, "num"): text.cast(pl.Float64,
                                                                                                    strict=False)}
    return {_parts(fld, "miss"): c.is_null(), _parts(fld, "num"): c.cast(pl.Float64)}


def _count(fld: str, dtype: pl.DataType, *, required: bool, limit: int, general: bool = False) -> Step:
    """(Int64 value, bad) as ingest.traces.checks.check_counts decides. ``general``: text is read as that check
    reads it (trimmed, then any number that is whole: ``12.0``, `` 4 ``), not only as a plain integer."""
    if dtype.is_integer():  # whole and finite already: only the range to check, no float round trip
        c = pl.col(fld)
        bad = (c.is_null() & required) | (c < 0) | (c > limit)
        return {}, c.cast(pl.Int64), bad.fill_null(False)
    text_int = dtype == pl.String and not general
    first = _missing_and_number(fld, dtype, whole=text_int)
    missing, num = pl.col(_parts(fld, "miss")), pl.col(_parts(fld, "num"))
    if text_int:  # an Int64 already
        bad = (missing & required) | (~missing & (num.is_null() | (num < 0) | (num > limit)))
        return first, num, bad.fill_null(False)
    bad = (missing & required) | (~missing & (num.is_null() | num.is_nan() | (num < 0) | (num != num.floor())
                                              | (num > limit)))
    return first, num.cast(pl.Int64), bad.fill_null(False)


def _label(fld: str, dtype: pl.DataType) -> Step:
    """(raw label text, bad): the label as read; trimming, the checks of checks.check_labels and lower-casing
    run on the distinct values after grouping (:func:`finish_labels`), not on every request."""
    c = pl.col(fld)
    if dtype.is_numeric() or dtype == pl.Boolean or dtype == pl.Null:
        c = c.cast(pl.String)
    elif dtype != pl.String:
        return {}, pl.lit(None, pl.String), pl.lit(True)
    return {}, c, pl.lit(False)


def finish_labels(g: pl.DataFrame, workload: str | None) -> pl.DataFrame | None:
    """Grouped rows with raw ``workload`` / ``shard`` text (every distinct value read is among them) as
    :func:`ingest.traces.normalise` makes them: trimmed, empty → null, workload lower-cased and filled with
    ``workload``; None when a value fails checks.check_labels (the exact reader then names its line)."""
    out = {}
    for fld in ("workload", "shard"):
        text = pl.col(fld).str.strip_chars()
        text = pl.when(text != "").then(text)
        bad = g.select(((text.str.len_chars() > MAX_LABEL_CHARS) | text.str.contains(LABEL_FORBIDDEN))
                       .fill_null(False).any()).item()
        if bad:
            return None
        out[fld] = text.str.to_lowercase() if fld == "workload" else text
    if workload is not None:
        out["workload"] = out["workload"].fill_null(pl.lit(workload.strip().lower()))
    return g.with_columns(**out)


def _timestamp(fld: str, dtype: pl.DataType, unit: str, sample: str | None, general: bool
               ) -> tuple[dict[str, pl.Expr], pl.Expr, pl.Expr, pl.Expr]:
    """(first columns, seconds, missing, bad) as checks.check_timestamps decides (its all-missing case is the
    caller's)."""
    c = pl.col(fld)
    secs_col, miss_col = _parts(fld, "secs"), _parts(fld, "miss")
    if unit == "datetime":
        if dtype == pl.String:
            secs = strict_datetime_expr(c, sample or "")
            missing = c.is_null() | (c == "")  # "  " is missing to the exact reader: flagged here, it decides
            if general:  # the exact reader's own parsers, on the rows the common layout rejects
                secs = pl.coalesce(secs, fast_datetime_expr(c, sample or ""), pl.col("__general"))
                text = c.str.strip_chars()
                missing = text.is_null() | (text == "")
            first = {miss_col: missing, secs_col: secs}
            bad = ~pl.col(miss_col) & pl.col(secs_col).is_null()
        elif isinstance(dtype, pl.Datetime):
            first, bad = {miss_col: c.is_null(), secs_col: c.dt.epoch("us").cast(pl.Float64) / 1e6}, pl.lit(False)
        elif dtype == pl.Date:
            first, bad = ({miss_col: c.is_null(), secs_col: c.cast(pl.Int64).cast(pl.Float64) * 86400.0},
                          pl.lit(False))
        else:
            return {}, pl.lit(None, pl.Float64), pl.lit(True), pl.lit(True)
    else:
        if not (dtype == pl.String or dtype.is_numeric() or dtype == pl.Null):
            return {}, pl.lit(None, pl.Float64), pl.lit(True), pl.lit(True)
        parts = _missing_and_number(fld, dtype)
        num = pl.col(_parts(fld, "num"))
        first = {miss_col: parts[_parts(fld, "miss")], _parts(fld, "num"): parts[_parts(fld, "num")]}
        bad = ~pl.col(miss_col) & (num.is_null() | num.is_nan() | num.is_infinite())
        first_secs = num * UNIT_SCALE[unit]
        return first, first_secs, pl.col(miss_col), (bad | (~pl.col(miss_col) & (first_secs.abs() > MAX_ABS_SECONDS))
                                                     ).fill_null(False)
    secs, missing = pl.col(secs_col), pl.col(miss_col)
    bad = bad | (~missing & (secs.abs() > MAX_ABS_SECONDS))
    return first, secs, missing, bad.fill_null(False)


def _sample(lf: pl.LazyFrame, col: pl.Expr, head: pl.LazyFrame | None = None) -> str | None:
    """The first non-null value of a text column (what the exact reader keys its fast layout on); looked for
    in ``head`` (the file's first lines, ~0.2 s CPU less than starting the scan of a large file) first."""
    if head is not None:
        try:
            got = head.select(col).filter(col.is_not_null()).head(1).collect()
        except pl.exceptions.PolarsError:  # e.g. a header longer than the head: the whole file decides
            got = None
        if got is not None and got.height:
            value = got.item()
            return value if isinstance(value, str) else None
    got = lf.select(col).filter(col.is_not_null()).head(1).collect()
    value = got.item() if got.height else None
    return value if isinstance(value, str) else None


def _resolved_unit(lf: pl.LazyFrame, col: pl.Expr, dtype: pl.DataType, head: pl.LazyFrame | None = None
                   ) -> str | None:
    """A bare ``timestamp`` column's unit, as checks.resolve_auto_unit decides (None: the exact reader's error)."""
    if isinstance(dtype, pl.Datetime | pl.Date):
        return "datetime"
    if dtype != pl.String:
        return None
    first = _sample(lf, col, head)
    if first is None:
        return None
    return "datetime" if datetime_seconds(pl.Series([first]))[0] is not None else None


def lazy_trace(src: Source, kind: str, mapping: TraceMapping | None, limits: Limits, workload: str | None,
               *, general_timestamps: bool = False, data: bytes | None = None) -> LazyTrace | None:
    """The file as a validating lazy query, or None when only the exact reader can read it.

    ``workload`` is the per-file choice (``--workload`` or the format's file-name hint) that fills
    unlabelled rows. ``general_timestamps`` (the general pass) reads CSV token counts as text, checked as
    checks.check_counts does, and also tries the general date-time parser on rows the file's
    own layout rejects (a second, rarer pass: the exact reader does the same). ``data``: CSV bytes to read
    instead of the file (a guess at a file's time span from its last lines)."""
    if kind not in STREAMABLE or src.data_path != src.path:  # .gz: inflated copies take the exact reader
        return None
    try:
        if kind == "parquet":
            return _parquet(src, mapping, limits, workload, general_timestamps)
        return _csv(src, kind, mapping, limits, workload, general_timestamps, data)
    except (pl.exceptions.PolarsError, OSError):
        return None


def _csv(src: Source, kind: str, mapping: TraceMapping | None, limits: Limits, workload: str | None,
         general: bool, data: bytes | None = None) -> LazyTrace | None:
    header = read_header(src)
    if kind in FIXED:
        wanted, unit = FIXED[kind]
        required_ts, default_output = True, False
    else:
        m = resolve_mapping(src, header.names, mapping, header.line)
        wanted, unit, required_ts, default_output = m.columns(), m.timestamp_unit, False, m.input_tokens is None
    if "prompt" in wanted or default_output:
        return None
    idx = _indices(header, wanted)
    if idx is None:
        return None
    # Token counts are parsed as integers by the CSV reader itself (a plain integer, spaces before it allowed):
    # a value it cannot parse ("12.0", "4 ") fails the first pass; the general pass reads them as text and
    # checks them as checks.check_counts does (~1 s CPU more per 10 M rows, so only when the first pass failed).
    counts = set() if general else {i for fld, i in idx.items() if fld in COUNT_FIELDS}
    dtypes = [pl.Int64() if i in counts else pl.String() for i in range(len(header.names))]
    lf = pl.scan_csv(io.BytesIO(data) if data is not None else src.data_path, infer_schema=False, has_header=True,
                     glob=False, quote_char='"', schema_overrides=dtypes)
    picks = [pl.nth(i).alias(fld) for fld, i in idx.items()]
    first = None
    if 0 not in idx.values():
        picks.append(pl.nth(0).alias("__first"))
        first = "__first"
    fields = list(idx)
    first = first or fields[0]
    rest = [f for f in fields if f != first]
    lf = _drop_blank(lf.select(*picks), first, rest, trim=src.blank_lines > 0)
    head = None
    if data is None and not src.has_quote and (end := src.head.rfind(b"\n")) > 0:
        # the first lines alone, to find the first timestamp without starting a scan of the whole file
        # (no quotes: a record cannot span the cut)
        head = pl.scan_csv(io.BytesIO(src.head[:end + 1]), infer_schema=False, has_header=True, glob=False,
                           quote_char='"', schema_overrides=dtypes)
        head = _drop_blank(head.select(*picks), first, rest, trim=True)
    schema = {f: pl.Int64() if f in COUNT_FIELDS and not general else pl.String() for f in fields}
    return _finish(lf, schema, kind, unit, required_ts, limits, workload, general, head)


def _drop_blank(lf: pl.LazyFrame, first: str, rest: list[str], *, trim: bool) -> pl.LazyFrame:
    """Without blank lines (a row of nulls, whitespace in the first field), as csvread drops them.

    A count column reads spaces as null, so a count first field is blank when it is null. ``trim``: the
    pre-scan found lines starting with whitespace, so text is trimmed to find them (~0.6 s CPU per 10 M
    rows); otherwise only an empty first field is blank — a whitespace-only line the pre-scan cannot see
    (a form feed, a no-break space) then stays a row with null counts, which flags the pass, and the exact
    reader drops it."""
    c = pl.col(first)
    if first in COUNT_FIELDS:
        first_blank = c.is_null()
    elif trim:
        first_blank = c.str.strip_chars().fill_null("") == ""
    else:
        first_blank = c.is_null() | (c == "")
    blank = pl.all_horizontal([pl.col(r).is_null() for r in rest] or [pl.lit(True)]) & first_blank
    return lf.filter(~blank)


def _indices(header: CsvHeader, wanted: dict[str, str]) -> dict[str, int] | None:
    found = {}
    for fld, name in wanted.items():
        i = header.find(name)
        if i is None:
            return None  # the exact reader names the missing column on the header line
        found[fld] = i
    return found


def _parquet(src: Source, mapping: TraceMapping | None, limits: Limits, workload: str | None,
             general: bool) -> LazyTrace | None:
    lf = pl.scan_parquet(src.data_path, glob=False)
    schema = lf.collect_schema()
    m = resolve_mapping(src, schema.names(), mapping, 0)
    if m.prompt is not None or m.input_tokens is None:
        return None
    picks, types = [], {}
    for fld, col in m.columns().items():
        if col not in schema or type_problem(fld, schema[col], m.timestamp_unit) is not None:
            return None
        expr, dtype = pl.col(col), schema[col]
        if isinstance(dtype, pl.Categorical | pl.Enum):
            expr, dtype = expr.cast(pl.String), pl.String()
        picks.append(expr.alias(fld))
        types[fld] = dtype
    return _finish(lf.select(*picks), types, "parquet", m.timestamp_unit, False, limits, workload, general)


def _finish(lf: pl.LazyFrame, types: dict[str, pl.DataType], kind: str, unit: str, required_ts: bool,
            limits: Limits, workload: str | None, general: bool, head: pl.LazyFrame | None = None
            ) -> LazyTrace | None:
    """``head``: the same query over the file's first lines only (where the first timestamp is looked for)."""
    limit = limits.max_tokens_per_request
    first: dict[str, pl.Expr] = {}
    out: dict[str, pl.Expr] = {}
    bads: list[pl.Expr] = []

    def add(name: str, step: Step) -> None:
        cols, value, bad = step
        first.update(cols)
        out[name] = value
        bads.append(bad)

    for fld in ("input_tokens", "output_tokens"):
        if fld not in types:
            return None
        add(fld, _count(fld, types[fld], required=True, limit=limit, general=general))
    ts_missing: pl.Expr = pl.lit(True)
    sample = None
    if "timestamp" in types:
        if unit == AUTO_UNIT:
            unit = _resolved_unit(lf, pl.col("timestamp"), types["timestamp"], head) or ""
            if not unit:
                return None
        sample = (_sample(lf, pl.col("timestamp"), head) if unit == "datetime" and types["timestamp"] == pl.String
                  else None)
        if general and sample is not None:
            lf = parse_datetime_seconds(lf, "timestamp", "__general")
        cols, secs, ts_missing, bad = _timestamp("timestamp", types["timestamp"], unit, sample, general)
        first.update(cols)
        out["ts"] = secs
        bads.append(bad)
    else:
        out["ts"] = pl.lit(None, pl.Float64)
    for fld in ("workload", "shard"):
        if fld in types:
            add(fld, _label(fld, types[fld]))
        else:
            out[fld] = pl.lit(None, pl.String)
    for fld in ("drafted_tokens", "accepted_tokens"):
        if fld in types:
            add(fld, _count(fld, types[fld], required=False, limit=limit * COUNTER_LIMIT_FACTOR, general=general))
        else:
            out[fld] = pl.lit(None, pl.Int64)
    frame = lf.with_columns(**first).select(*(e.alias(k) for k, e in out.items()), ts_missing.alias("ts_missing"),
                                            pl.any_horizontal(bads).alias("bad"))
    # checked on the parsed counters, as normalise does
    frame = frame.with_columns(pl.col("bad") | (pl.col("accepted_tokens") > pl.col("drafted_tokens")).fill_null(False))
    return LazyTrace(frame=frame.select(COLUMNS), format=kind, timestamp_required=required_ts,
                     has_timestamp_column="timestamp" in types, text_datetime=sample is not None, workload=workload,
                     labels=tuple(f for f in ("workload", "shard") if f in types))


YEAR_S = 365.25 * 86_400


def normalised(src: Source, kind: str, mapping: TraceMapping | None, limits: Limits, workload: str | None
               ) -> tuple[pl.DataFrame, dict[str, int], list[str]] | None:
    """The trace in TRACE_SCHEMA from the validating query, as :func:`ingest.traces.normalise.normalise` makes it
    from the exact reader's columns: the same checks, drops, order, warnings and rebased times.

    None when the query does not cover the file (:func:`lazy_trace`) or flags anything — a bad value, a missing
    timestamp, a request too far back in time, nothing left: the exact parse then locates the error (file:line)
    or decides the rows this pass could not (``12.0`` as a count, a date-time in an unusual layout). A CSV
    padded with many blank lines also takes the exact parse, which reads a compacted copy: collected whole, the
    query would hold a row per blank line (~18 bytes each; 40 MB of newlines peaked 735 MB above the imports)."""
    if src.blank_lines > COMPACT_ABOVE:
        return None
    for general in (False, True):
        lt = lazy_trace(src, kind, mapping, limits, workload, general_timestamps=general)
        if lt is None:  # not covered, or the first lines already fail the first pass ("12.0" as a count)
            continue
        try:
            df = lt.frame.with_row_index("request_index").collect(engine="streaming")
        except pl.exceptions.PolarsError:  # "12.0" as a count (the general pass reads it), a malformed CSV row
            if general or kind == "parquet":  # (the exact parse names its line)
                return None
            continue
        if df.height and not df["bad"].any():
            return _normalised(df, lt, limits)
        if not lt.text_datetime and kind == "parquet":  # typed columns: the general pass reads nothing more
            return None
    return None


def _labels_by_value(df: pl.DataFrame, lt: LazyTrace) -> pl.DataFrame | None:
    """:func:`finish_labels` per request, run on each label column's distinct values and mapped back onto the
    rows (regex and trimming on 10 M label texts cost ~2 s CPU; on their few distinct values, nothing)."""
    out = {}
    for fld in lt.labels:
        values = df.get_column(fld).unique().drop_nulls()
        other = "shard" if fld == "workload" else "workload"
        done = finish_labels(pl.DataFrame({fld: values, other: pl.Series(other, [None] * values.len(), pl.String)}),
                             None)
        if done is None:
            return None
        out[fld] = pl.col(fld).replace_strict(values, done.get_column(fld), default=None, return_dtype=pl.String)
    df = df.with_columns(**out) if out else df
    if lt.workload is not None:
        df = df.with_columns(pl.col("workload").fill_null(pl.lit(lt.workload.strip().lower())))
    return df


def _normalised(df: pl.DataFrame, lt: LazyTrace, limits: Limits
                ) -> tuple[pl.DataFrame, dict[str, int], list[str]] | None:
    labelled = _labels_by_value(df, lt)
    if labelled is None:
        return None
    df = labelled
    n_missing = int(df["ts_missing"].sum())
    has_ts = lt.has_timestamp_column and not (n_missing == df.height and not lt.timestamp_required)
    if has_ts and n_missing:
        return None
    zero_out = pl.col("output_tokens") == 0
    zero_in = (pl.col("input_tokens") == 0) & ~zero_out
    counts = df.select(zero_out.sum().alias("zero_output_tokens"), zero_in.sum().alias("zero_input_tokens")).row(0,
                                                                                                          named=True)
    dropped = {reason: int(n) for reason, n in counts.items() if n}
    df = df.filter(~(zero_out | zero_in))
    if df.height == 0:
        return None
    warnings: list[str] = []
    if has_ts:
        ts = df["ts"]
        back = ts.cum_max() - ts
        worst = float(back.max())  # type: ignore[arg-type]
        if worst > limits.max_backwards_s:
            return None
        if worst > 0:
            warnings.append(f"{int((back > 0).sum())} requests were out of time order (by at most {worst:.3f} s) "
                            "and were sorted by timestamp")
            df = df.sort("ts", maintain_order=True)
        span = float(ts.max() - ts.min())  # type: ignore[operator]
        if span > limits.warn_span_s:
            warnings.append(f"requests span {span / YEAR_S:,.1f} years from first to last arrival; real traces "
                            "cover hours to weeks: check the timestamp column and its unit")
        df = df.with_columns(pl.col("ts") - pl.col("ts").min())
    else:
        df = df.with_columns(pl.lit(None, pl.Float64).alias("ts"))
    frame = df.select(pl.col("ts").alias("timestamp_s"), pl.lit(None, pl.String).alias("prompt"),
                      *(c for c in TRACE_SCHEMA if c not in ("timestamp_s", "prompt")))
    return frame.select(list(TRACE_SCHEMA)).cast(TRACE_SCHEMA), dropped, warnings  # type: ignore[arg-type]
