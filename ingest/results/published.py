"""Reader for the published-results CSV (the shape of data/published_results.csv): one row per published number.

Columns: ``source_url, source_title, published, engine, gpu, gpu_count, model, model_family, moe, method,
depth, workload, dataset, concurrency, temperature, metric, value, unit, notes`` (``source_url, method,
model, model_family, workload, metric, value`` required). A published measurement is not a cell, so:

* every row lands in the ``published`` table with its source columns intact (plus the CSV line);
* rows whose metric has a ``cells`` column also land in a cell of the import run (backend ``import``),
  with the metric in that column and ``published.cell_id``/``cell_column`` pointing at it:
  ``acceptance_length`` → acceptance_length; ``acceptance_rate`` (unit fraction) → acceptance_rate;
  ``output_throughput_tok_s`` → output_throughput (tok/s) or output_throughput_per_gpu (tok/s/GPU, tok/s
  per rank); ``tpot_ms`` → mean_tpot_ms. Speedups, ITL, per-user and cumulative per-position rates stay
  in ``published`` only (no column means the same thing).
* cell dimensions: method, family (model_family), model, workload, gpu (empty → unknown) as given; depth
  must be one whole number (``none`` → 0), concurrency one whole number or empty (→ NULL: load not stated);
  rows with ranges ("3-8", "2 per rank") stay in ``published`` only;
* the row's ``dataset`` is a dimension of its cell (``cells.dataset``, under the workload): HumanEval and MBPP
  rows, both "code", are two cells; rows of one cell and dataset that report the same metric twice are told
  apart by qualifying the workload with the temperature (``code [T=0.0]``); rows still colliding stay in
  ``published`` only. The report counts each reason.
"""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from ingest.errors import InputError, UsageError
from ingest.records import CellKey
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import text_lines

FORMAT = "published_csv"
COLUMNS = ("source_url", "source_title", "published", "engine", "gpu", "gpu_count", "model", "model_family", "moe",
           "method", "depth", "workload", "dataset", "concurrency", "temperature", "metric", "value", "unit", "notes")
# the `published` table's columns (ingest/schema.py), spelled here so parsing needs no SQLAlchemy import
TABLE_COLUMNS = ("run_id", "line", *COLUMNS, "cell_id", "cell_column")
REQUIRED = ("source_url", "method", "model", "model_family", "workload", "metric", "value")
PER_GPU_UNITS = frozenset({"tok/s/gpu", "tok/s per rank", "tok/s per gpu"})


def looks_like_header(names: list[str]) -> bool:
    return len({"source_url", "metric", "value", "model_family", "unit"} & {n.strip() for n in names}) >= 3


def cell_column(metric: str, unit: str) -> str | None:
    unit = unit.strip().lower()
    if metric == "acceptance_length":
        return "acceptance_length"
    if metric == "acceptance_rate" and unit in ("fraction", ""):
        return "acceptance_rate"
    if metric == "output_throughput_tok_s":
        if unit in PER_GPU_UNITS:
            return "output_throughput_per_gpu"
        return "output_throughput" if unit == "tok/s" else None
    if metric == "tpot_ms" and unit in ("ms", ""):
        return "mean_tpot_ms"
    return None


def _whole(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _rows(path: Path, lines: Iterable[str]) -> list[dict[str, Any]]:
    reader = csv.reader(lines)  # one row at a time from the file: blank-line padding costs no memory
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise InputError(path, 1, f"unreadable CSV header: {exc}") from None
    names = [h.strip() for h in header]
    dup = [n for n, c in Counter(names).items() if c > 1]
    if dup:
        raise InputError(path, 1, f"duplicate header {dup[0]!r}")
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise InputError(path, 1, f"missing columns {', '.join(missing)}; expected the published-results header "
                         f"({', '.join(COLUMNS)})")
    out = []
    while True:
        start = reader.line_num + 1  # a quoted field may span lines: errors point at the row's first line
        try:
            raw = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(path, start, f"malformed CSV: {exc}") from None
        line = start
        if not any(v.strip() for v in raw):
            continue
        if len(raw) != len(names):
            spans = f" (a quote opened here runs to line {reader.line_num})" if reader.line_num > start else ""
            raise InputError(path, line, f"{len(raw)} fields, expected {len(names)} (as in the header){spans}")
        row = {n: v.strip() for n, v in zip(names, raw, strict=True)}
        for col in ("source_url", "method", "metric"):
            if not row[col]:
                raise InputError(path, line, f"empty {col!r}")
        try:
            value = float(row["value"])
        except ValueError:
            raise InputError(path, line, f"value {row['value']!r} is not a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise InputError(path, line, f"value {row['value']!r} is not a finite number")
        row["value"] = value
        for col, kind in (("gpu_count", int), ("temperature", float)):
            text_value = row.get(col, "")
            try:
                row[col] = kind(text_value) if text_value else None
            except ValueError:
                raise InputError(path, line, f"{col} {text_value!r} is not a number") from None
        moe = row.get("moe", "").lower()
        if moe not in ("", "true", "false"):
            raise InputError(path, line, f"moe {row['moe']!r}; expected true or false")
        row["moe"] = None if not moe else moe == "true"
        row["line"] = line
        out.append(row)
    if not out:
        raise InputError(path, 0, "no measurements below the header")
    return out


def _assign(rows: list[dict[str, Any]]) -> Counter:
    """Set each row's cell key (or the reason it has none); returns reason counts."""
    reasons: Counter = Counter()
    for r in rows:
        r["_col"] = cell_column(r["metric"], r.get("unit", ""))
        depth = 0 if r["method"] == "none" else _whole(r.get("depth", ""))
        conc_text = r.get("concurrency", "")
        conc = None if not conc_text else _whole(conc_text)  # empty: load not stated (NULL), never 0
        why = ("metric has no cells column" if r["_col"] is None else "depth is not one number" if depth is None
               else "concurrency is not one number" if conc_text and conc is None else None)
        r["_why"] = why
        if why:
            reasons[why] += 1
            continue
        r["_dims"] = [r["method"], depth, r["model_family"] or "unknown", r["model"] or "unknown", r["workload"],
                      r.get("gpu") or "unknown", conc]
        r["_dataset"] = r.get("dataset") or None  # a cell dimension under the workload (never folded into it)
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if not r["_why"]:
            groups[(*r["_dims"], r["_dataset"], r["_col"])].append(r)
    clashing = {(*g[0]["_dims"], g[0]["_dataset"]) for g in groups.values() if len(g) > 1}
    for r in rows:  # rows of one cell and dataset reporting one metric twice: told apart by temperature
        if not r["_why"] and (*r["_dims"], r["_dataset"]) in clashing:
            r["_dims"][4] = f"{r['_dims'][4]} [T={r.get('temperature')}]"
    groups = defaultdict(list)
    for r in rows:
        if not r["_why"]:
            groups[(*r["_dims"], r["_dataset"], r["_col"])].append(r)
    for g in groups.values():
        if len(g) > 1:
            for r in g:
                r["_why"] = "several values for the same cell and metric"
                reasons[r["_why"]] += 1
    return reasons


def _table(rows: list[dict[str, Any]], run_id: str) -> pl.DataFrame:
    """The ``published`` rows: source columns as read (empty text → null), plus where each landed."""
    types = {"value": pl.Float64, "temperature": pl.Float64, "line": pl.Int64, "gpu_count": pl.Int64,
             "moe": pl.Boolean}
    names = TABLE_COLUMNS
    data = {c: [run_id] * len(rows) if c == "run_id" else [(r.get(c) or None) if isinstance(r.get(c), str)
                                                            else r.get(c) for r in rows] for c in names}
    return pl.DataFrame(data, schema={c: types.get(c, pl.String) for c in names})


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, lines = text_lines(path)
    rows = _rows(path, lines)
    if opts.overrides:
        raise UsageError("--set does not apply to the published-results CSV (each row names its dimensions)")
    reasons = _assign(rows)
    run = import_run(path, FORMAT, file_hash, notes=f"published results: {len({r['source_url'] for r in rows})} "
                     f"sources, {len(rows)} measurements")
    cells: dict[str, ParsedCell] = {}
    for r in rows:
        if r["_why"]:
            continue
        key = CellKey(*r["_dims"], dataset=r["_dataset"])
        cell = cells.get(key.cell_id)
        if cell is None:
            cell = cells[key.cell_id] = ParsedCell(key=key, requests=pl.DataFrame(), window_s=None,
                                                   gpu_count=r["gpu_count"] or 0)
        cell.headline[r["_col"]] = r["value"]
        r["cell_id"], r["cell_column"] = key.cell_id, r["_col"]
    table = _table(rows, run.run_id)
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=run, cells=list(cells.values()),
                        extra={"published": table})
    parsed.summary = {"measurements": len(rows), "in_cells": sum(1 for r in rows if not r["_why"]),
                      "not_in_cells": dict(reasons), "sources": len({r["source_url"] for r in rows})}
    return parsed
