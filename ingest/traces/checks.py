"""Vectorised value checks for one field: token counts, timestamps and labels.

Each check takes the raw column (text from CSV/JSONL, or a typed Parquet column), validates every
row in one polars pass, and on failure names the *first* bad row with what was wrong and what was
expected; the caller turns that row into a line number. Token counts must be whole, finite,
non-negative and at most ``Limits.max_tokens_per_request`` (text like ``12.0`` is accepted as 12).
"""

from __future__ import annotations

import polars as pl

from ingest import labels
from ingest.traces.timeparse import EXAMPLE, datetime_seconds

MAX_LABEL_CHARS = 256
# Control characters (C0, DEL, C1) and bidi embeddings/overrides/isolates: in a label they garble tables or
# spoof what a chart shows (a tenant name rendered right-to-left), so a label holding one is refused, as
# ``--set`` values are (ingest/results/dims.py).
LABEL_FORBIDDEN = labels.FORBIDDEN
MAX_ABS_SECONDS = 1e12  # ~31,700 years: anything bigger is a wrong unit or garbage
UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds"}


class BadValue(Exception):
    """Row ``row`` (0-based position in the frame; -1: the column as a whole) is invalid."""

    def __init__(self, row: int, message: str) -> None:
        super().__init__(message)
        self.row, self.message = row, message


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _first(mask: pl.Series) -> int | None:
    hits = mask.fill_null(False).arg_true()
    return int(hits[0]) if hits.len() else None


def _as_numbers(col: pl.Series, what: str) -> tuple[pl.Series, pl.Series]:
    """(Float64 values, missing mask) for text or numeric columns."""
    if col.dtype == pl.String:
        text = col.str.strip_chars()
        missing = text.is_null() | (text == "")
        return text.cast(pl.Float64, strict=False), missing
    if col.dtype.is_numeric():
        return col.cast(pl.Float64), col.is_null()
    if col.dtype == pl.Null:
        return col.cast(pl.Float64), col.is_null()
    raise BadValue(-1, f"{what} holds {col.dtype} values; expected numbers")


def check_counts(col: pl.Series, what: str, *, required: bool, limit: int) -> pl.Series:
    """Int64 counts; nulls only where missing and not ``required``."""
    num, missing = _as_numbers(col, what)
    bad = (missing & required) | (
        ~missing & (num.is_null() | num.is_nan() | (num < 0) | (num != num.floor()) | (num > limit))
    )
    row = _first(bad)
    if row is not None:
        raw, value = col[row], num[row]
        if missing[row]:
            msg = f"missing {what}; expected a whole number of tokens"
        elif value is None:
            msg = f"expected a whole number for {what}, got {_show(raw)}"
        elif value != value:
            msg = f"{what} is NaN; expected a whole number of tokens"
        elif value in (float("inf"), float("-inf")):
            msg = f"{what} is infinite ({_show(raw)}); expected a whole number of tokens"
        elif value < 0:
            msg = f"{what} is negative ({_show(raw)}); expected a count >= 0"
        elif value > limit:
            msg = f"{what} of {_show(raw)} is more than {limit:,} tokens per request; expected a real count"
        else:
            msg = f"expected a whole number for {what}, got {_show(raw)}"
        raise BadValue(row, msg)
    return pl.Series(col.name, num.cast(pl.Int64), dtype=pl.Int64)


def _datetime_seconds(col: pl.Series, what: str) -> tuple[pl.Series, pl.Series]:
    if col.dtype == pl.String:
        text = col.str.strip_chars()
        missing = text.is_null() | (text == "")
        secs = datetime_seconds(col)
        row = _first(~missing & secs.is_null())
        if row is not None:
            raise BadValue(row, f"{what} {_show(col[row])} is not a date-time; expected one like '{EXAMPLE}'")
        return secs, missing
    if isinstance(col.dtype, pl.Datetime):
        return col.dt.epoch("us").cast(pl.Float64) / 1e6, col.is_null()
    if col.dtype == pl.Date:
        return col.cast(pl.Int64).cast(pl.Float64) * 86400.0, col.is_null()
    raise BadValue(-1, f"{what} holds {col.dtype} values; expected date-times like '{EXAMPLE}'")


def resolve_auto_unit(col: pl.Series) -> str | None:
    """Unit of a bare ``timestamp`` column: 'datetime' when its values are date-times, else None."""
    if isinstance(col.dtype, pl.Datetime | pl.Date):
        return "datetime"
    if col.dtype != pl.String:
        return None
    sample = col.drop_nulls().head(1)
    if sample.len() == 0:
        return None
    return "datetime" if datetime_seconds(sample)[0] is not None else None


def check_timestamps(col: pl.Series, what: str, unit: str, *, required: bool) -> pl.Series | None:
    """Float64 epoch-ish seconds, or None when the column is entirely empty and not required."""
    if unit == "datetime":
        secs, missing = _datetime_seconds(col, what)
    else:
        num, missing = _as_numbers(col, what)
        bad = ~missing & (num.is_null() | num.is_nan() | num.is_infinite())
        row = _first(bad)
        if row is not None:
            raise BadValue(row, f"expected a number of {UNIT_WORDS[unit]} for {what}, got {_show(col[row])}")
        secs = num * UNIT_SCALE[unit]
    n_missing = int(missing.sum())
    if n_missing == col.len() and not required:
        return None
    row = _first(missing)
    if row is not None:
        raise BadValue(row, f"missing {what}; expected a timestamp on every request (or on none)")
    row = _first(secs.abs() > MAX_ABS_SECONDS)
    if row is not None:
        raise BadValue(row, f"{what} {_show(col[row])} is out of range for unit {unit!r}; check the unit")
    return secs.rename(col.name)


def check_labels(col: pl.Series, what: str, *, lower: bool) -> pl.Series:
    """Short text labels (workload, shard): trimmed, empty -> null; numbers become text."""
    if col.dtype.is_numeric() or col.dtype == pl.Boolean or col.dtype == pl.Null:
        col = col.cast(pl.String)
    if col.dtype != pl.String:
        raise BadValue(-1, f"{what} holds {col.dtype} values; expected text labels")
    text = col.str.strip_chars()
    text = pl.Series(col.name, text).set(text == "", None)
    row = _first(text.str.len_chars() > MAX_LABEL_CHARS)
    if row is not None:
        raise BadValue(row, f"{what} is longer than {MAX_LABEL_CHARS} characters; expected a short label")
    row = _first(text.str.contains(LABEL_FORBIDDEN))
    if row is not None:
        raise BadValue(row, f"{what} {_show(col[row])} contains a control or bidi-override character; "
                            "expected a printable label")
    return text.str.to_lowercase() if lower else text


def check_text(col: pl.Series, what: str, *, required: bool) -> pl.Series:
    """Prompt text: must be text; missing is allowed unless ``required``."""
    if col.dtype == pl.Null:
        col = col.cast(pl.String)
    if col.dtype != pl.String:
        raise BadValue(-1, f"{what} holds {col.dtype} values; expected text")
    if required:
        row = _first(col.is_null())
        if row is not None:
            raise BadValue(row, f"missing {what}; expected text")
    return col
