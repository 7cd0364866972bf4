"""From a reader's raw columns to the one trace schema: validate, estimate, drop, order.

Readers hand over a :class:`RawTable` (columns already named after the schema fields, values still
as the file had them). This module applies the same rules to every format:

* every value is checked (:mod:`ingest.traces.checks`); the first bad one is an ``InputError`` on
  its line, and nothing is returned;
* input tokens come from the count column, else are estimated from the prompt text; missing output
  counts get vLLM's default output length only for formats that have none (vLLM custom, Spec-Bench);
* requests with 0 output tokens (BurstGPT's failed requests) or 0 input tokens are dropped and
  counted in ``dropped``; nothing left is an error;
* arrival times out of order by less than ``Limits.max_backwards_s`` are sorted (with a warning),
  more than that is an error (the file is probably a concatenation or has a broken clock); then
  times are rebased so the first request is at 0 s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ingest.errors import InputError
from ingest.traces.checks import (
    BadValue,
    check_counts,
    check_labels,
    check_text,
    check_timestamps,
    resolve_auto_unit,
)
from ingest.traces.limits import Limits
from ingest.traces.locate import Locator
from ingest.traces.mapping import AUTO_UNIT
from ingest.traces.schema import TRACE_SCHEMA
from ingest.traces.tokens import estimate_tokens_expr

COUNTER_LIMIT_FACTOR = 16  # drafted tokens can exceed output tokens (depth x steps), but not wildly


@dataclass(slots=True)
class RawTable:
    """A reader's output: schema-named columns with unchecked values, plus how to find a row's line."""

    frame: pl.DataFrame  # "_rec" Int64 request index; optional "_src" record index for locate()
    columns: dict[str, str]  # field -> source column / key name, for messages
    locate: Locator  # record index -> 1-based line (the row number for Parquet)
    header_line: int = 0  # where column-level problems are reported (CSV header line, else 0)
    timestamp_unit: str = "s"
    timestamp_required: bool = False
    default_output: bool = False  # formats without output counts get Limits.default_output_tokens
    workload_hint: str | None = None  # the format's own guess (Azure file name), below an explicit choice
    dropped: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _nulls(name: str, dtype: pl.DataType, n: int) -> pl.Series:
    return pl.repeat(None, n, dtype=dtype, eager=True).alias(name)


def _what(raw: RawTable, fld: str) -> str:
    col = raw.columns.get(fld)
    return f"{fld.replace('_', ' ')} ({col!r})" if col else fld.replace("_", " ")


def _fail(path: Path, raw: RawTable, exc: BadValue) -> InputError:
    if exc.row < 0:
        return InputError(path, raw.header_line, exc.message)
    rec_col = "_src" if "_src" in raw.frame.columns else "_rec"
    return InputError(path, raw.locate(int(raw.frame.get_column(rec_col)[exc.row])), exc.message)


def _columns(raw: RawTable, limits: Limits, workload: str | None) -> dict[str, pl.Series]:
    df, n = raw.frame, raw.frame.height
    has = set(df.columns)
    out: dict[str, pl.Series] = {"request_index": df.get_column("_rec").cast(pl.Int64)}
    out["prompt"] = (
        check_text(df.get_column("prompt"), _what(raw, "prompt"), required="input_tokens" not in has)
        if "prompt" in has
        else _nulls("prompt", pl.String(), n)
    )
    limit = limits.max_tokens_per_request
    if "input_tokens" in has:
        out["input_tokens"] = check_counts(df.get_column("input_tokens"), _what(raw, "input_tokens"),
                                           required=True, limit=limit)
    else:
        est = pl.DataFrame({"p": out["prompt"]}).select(estimate_tokens_expr(pl.col("p"))).to_series()
        raw.warnings.append("input tokens were estimated from prompt text (approximate, see docs/traces.md)")
        out["input_tokens"] = est.clip(upper_bound=limit)
    if "output_tokens" in has:
        outs = check_counts(df.get_column("output_tokens"), _what(raw, "output_tokens"),
                            required=not raw.default_output, limit=limit)
    else:
        outs = _nulls("output_tokens", pl.Int64(), n)
    if raw.default_output and (n_default := outs.null_count()):
        outs = outs.fill_null(limits.default_output_tokens)
        raw.warnings.append(
            f"{n_default} requests had no output token count; used {limits.default_output_tokens} "
            "(vLLM's default output length for this dataset type)"
        )
    out["output_tokens"] = outs
    ts = None
    if "timestamp" in has:
        unit = raw.timestamp_unit
        if unit == AUTO_UNIT:
            unit = resolve_auto_unit(df.get_column("timestamp")) or ""
            if not unit:
                raise BadValue(-1, f"cannot tell the unit of {_what(raw, 'timestamp')}; pass a mapping with "
                                   "timestamp_unit s, ms, us or datetime (command line: --timestamp-unit UNIT)")
        ts = check_timestamps(df.get_column("timestamp"), _what(raw, "timestamp"), unit,
                              required=raw.timestamp_required)
    out["timestamp_s"] = ts if ts is not None else _nulls("timestamp_s", pl.Float64(), n)
    for fld in ("workload", "shard"):
        out[fld] = (check_labels(df.get_column(fld), _what(raw, fld), lower=fld == "workload")
                    if fld in has else _nulls(fld, pl.String(), n))
    workload = workload if workload is not None else raw.workload_hint
    if workload is not None:  # the per-file choice fills rows the file left unlabelled
        out["workload"] = out["workload"].fill_null(workload.strip().lower())
    for fld in ("drafted_tokens", "accepted_tokens"):
        out[fld] = (check_counts(df.get_column(fld), _what(raw, fld), required=False,
                                 limit=limit * COUNTER_LIMIT_FACTOR)
                    if fld in has else _nulls(fld, pl.Int64(), n))
    over = out["accepted_tokens"] > out["drafted_tokens"]
    if over.any():
        row = int(over.fill_null(False).arg_true()[0])
        raise BadValue(row, f"accepted tokens ({out['accepted_tokens'][row]}) exceed drafted tokens "
                            f"({out['drafted_tokens'][row]}); expected accepted <= drafted")
    return out


YEAR_S = 365.25 * 86_400


def _order(path: Path, raw: RawTable, frame: pl.DataFrame, limits: Limits) -> pl.DataFrame:
    ts = frame.get_column("timestamp_s")
    if ts.null_count() == frame.height:
        return frame
    back = ts.cum_max() - ts
    worst = float(back.max())  # type: ignore[arg-type]
    if worst > limits.max_backwards_s:
        row = int((back > limits.max_backwards_s).arg_true()[0])
        rec = int(frame.get_column("_src")[row])
        raise InputError(path, raw.locate(rec),
                         f"timestamp goes back {worst:,.0f} s before an earlier request; expected arrival times "
                         f"in order (at most {limits.max_backwards_s:,.0f} s out of order)")
    if worst > 0:
        late = int((back > 0).sum())
        raw.warnings.append(f"{late} requests were out of time order (by at most {worst:.3f} s) "
                            "and were sorted by timestamp")
        frame = frame.sort("timestamp_s", maintain_order=True)
    span = float(ts.max() - ts.min())  # type: ignore[operator]
    if span > limits.warn_span_s:
        raw.warnings.append(f"requests span {span / YEAR_S:,.1f} years from first to last arrival; real traces "
                            "cover hours to weeks: check the timestamp column and its unit")
    return frame.with_columns(pl.col("timestamp_s") - pl.col("timestamp_s").min())


def normalise(path: Path, raw: RawTable, limits: Limits, workload: str | None = None
              ) -> tuple[pl.DataFrame, dict[str, int], list[str]]:
    """Validated frame in TRACE_SCHEMA, rows dropped per reason, warnings."""
    if raw.frame.height == 0:
        detail = "".join(f", {n} {reason.replace('_', ' ')} dropped" for reason, n in raw.dropped.items())
        raise InputError(path, 0, f"no requests in the file{detail}; expected at least one")
    try:
        cols = _columns(raw, limits, workload)
    except BadValue as exc:
        raise _fail(path, raw, exc) from None
    src = raw.frame.get_column("_src" if "_src" in raw.frame.columns else "_rec").alias("_src")
    frame = pl.DataFrame([cols[name].alias(name) for name in TRACE_SCHEMA]).with_columns(src)
    dropped = dict(raw.dropped)
    zero_out = frame.get_column("output_tokens") == 0
    zero_in = (frame.get_column("input_tokens") == 0) & ~zero_out
    for reason, mask in (("zero_output_tokens", zero_out), ("zero_input_tokens", zero_in)):
        if (count := int(mask.sum())) > 0:
            dropped[reason] = dropped.get(reason, 0) + count
    frame = frame.filter(~(zero_out | zero_in))
    if frame.height == 0:
        detail = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in dropped.items())
        raise InputError(path, 0, f"no requests left after dropping {detail}; expected requests with "
                                  "input and output tokens > 0")
    frame = _order(path, raw, frame, limits)
    frame = frame.drop("_src").cast(TRACE_SCHEMA)  # type: ignore[arg-type]
    return frame, dropped, raw.warnings
