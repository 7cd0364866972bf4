"""Generic Parquet traces: typed columns named by a :class:`TraceMapping` (or well-known names).

Read with ``pl.scan_parquet`` (lazy; only the mapped columns are decoded). Parquet carries types, so
types are enforced: token counts and numeric timestamps must be numeric columns, date-time
timestamps a Datetime/Date (or text) column, the prompt a text column. A file that is not Parquet,
or is truncated, is refused whole (line 0); a bad value is reported by its 1-based *row* number,
which the error prints where text formats print a line.
"""

from __future__ import annotations

import polars as pl

from ingest.traces.generic import resolve_mapping
from ingest.traces.limits import Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

COUNT_FIELDS = frozenset({"input_tokens", "output_tokens", "drafted_tokens", "accepted_tokens"})


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:160]


def type_problem(fld: str, dtype: pl.DataType, unit: str) -> str | None:
    if fld in COUNT_FIELDS or (fld == "timestamp" and unit in ("s", "ms", "us")):
        return None if dtype.is_numeric() else "a numeric column"
    if fld == "timestamp":  # datetime or auto
        return None if isinstance(dtype, pl.Datetime | pl.Date) or dtype == pl.String else "a date-time column"
    if fld == "prompt":
        return None if dtype == pl.String else "a text column"
    ok = dtype == pl.String or dtype.is_numeric() or dtype == pl.Boolean or isinstance(dtype, pl.Categorical | pl.Enum)
    return None if ok else "a text column"


def read_parquet(src: Source, mapping: TraceMapping | None, limits: Limits) -> RawTable:
    try:
        lf = pl.scan_parquet(src.data_path, glob=False)
        schema = lf.collect_schema()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise src.fail(0, f"not a readable Parquet file ({_first_line(exc)})") from None
    m = resolve_mapping(src, schema.names(), mapping, 0)
    picks = []
    for fld, col in m.columns().items():
        if col not in schema:
            raise src.fail(0, f"missing column {col!r} (mapped to {fld}); found {', '.join(schema.names()[:12])}")
        want = type_problem(fld, schema[col], m.timestamp_unit)
        if want is not None:
            raise src.fail(0, f"column {col!r} ({fld}) has type {schema[col]}; expected {want}")
        expr = pl.col(col)
        if isinstance(schema[col], pl.Categorical | pl.Enum):
            expr = expr.cast(pl.String)
        picks.append(expr.alias(fld))
    try:
        df = lf.select(*picks).with_row_index("_rec").with_columns(pl.col("_rec").cast(pl.Int64)).collect()
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise src.fail(0, f"corrupt Parquet data ({_first_line(exc)})") from None
    if df.height == 0:
        raise src.fail(0, "Parquet file has no rows; expected at least one request")
    raw = RawTable(frame=df, columns=m.columns(), locate=lambda rec: rec + 1, header_line=0)
    raw.timestamp_unit = m.timestamp_unit
    raw.default_output = m.input_tokens is None
    return raw
