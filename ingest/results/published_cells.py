"""Reader for per-cell published tables (the shape of data/published/vllm-amd-2026-08/): one row per cell, plus
an optional per-position file recognised by its columns.

**Cells table** (``cells.csv``): one row per (model, method, depth, dataset[, load]) with the source's own
figures. Required columns ``source_url, model, method, depth, output_tok_s``; the others are read when present:
``published, engine, engine_version, gpu, gpu_count, model_family, moe, dataset, workload, concurrency,
temperature, speedup, baseline_output_tok_s, acceptance_length, acceptance_rate, method_label, notes,
draft_model``. The drafter checkpoint (for the deploy command) is ``draft_model``, else ``draft checkpoint=<id>``
in ``notes`` (the reference table's convention). Each
row lands as one cell of the import run (backend ``import``) with ``output_throughput``, ``acceptance_length``
and ``acceptance_rate`` as given, its ``dataset`` and its ``source_url`` on the cell. The row's
``baseline_output_tok_s`` becomes one ``none`` cell per (model, dataset, GPU, load), so speedup against ``none``
is the source's own ratio; rows of one such group must agree on it. An empty ``concurrency`` is stored as NULL
("load not stated"), never 0. An empty ``workload`` is looked up from the dataset in data/datasets.csv
(dataset → workload, with the reason); an empty ``model_family`` is inferred from the model name.

**Per-position table** (``positions.csv``): ``source_url, model, method, depth, dataset, position,
acceptance_rate`` (vLLM's cumulative per-position rate r_i). It must be imported with its cells table (same
command, or the folder): each row is matched to its cell there and lands in ``positions`` (what Explore reads).

Any bad row is an ``InputError`` with its line; nothing is written. The file hash makes a re-import add nothing.
"""

from __future__ import annotations

import csv
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from ingest.errors import InputError, UsageError
from ingest.paths import DATA_DIR
from ingest.records import KNOWN_METHODS, CellKey
from ingest.results.dims import family_from_model
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import text_lines

FORMAT = "published_cells"
POSITIONS_FORMAT = "published_positions"
DATASETS_CSV = DATA_DIR / "datasets.csv"
CELL_REQUIRED = ("source_url", "model", "method", "depth", "output_tok_s")
CELL_OPTIONAL = ("published", "engine", "engine_version", "gpu", "gpu_count", "model_family", "moe", "dataset",
                 "workload", "concurrency", "temperature", "speedup", "baseline_output_tok_s", "acceptance_length",
                 "acceptance_rate", "method_label", "notes", "draft_model")
# the drafter checkpoint, when the table has no draft_model column: "draft checkpoint=<id>" in its notes
DRAFT_IN_NOTES = re.compile(r"draft checkpoint=([^;,\s]+)")
POS_REQUIRED = ("source_url", "model", "method", "depth", "dataset", "position", "acceptance_rate")
# speedup = output_tok_s / baseline_output_tok_s up to print rounding: a larger gap is a warning (different base?)
SPEEDUP_TOLERANCE = 0.02


def looks_like_cells(names: list[str]) -> bool:
    have = {n.strip() for n in names}
    return set(CELL_REQUIRED) <= have and "metric" not in have


def looks_like_positions(names: list[str]) -> bool:
    have = {n.strip() for n in names}
    return {"source_url", "position", "acceptance_rate", "model", "method"} <= have and "metric" not in have


def header_of(path: Path) -> list[str]:
    """The first line of a CSV file as column names (empty when unreadable)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def folder_files(folder: Path) -> list[Path]:
    """The CSV files of a folder in this shape (cells tables first), or [] when it has no cells table."""
    csvs = sorted(p for p in folder.glob("*.csv") if p.is_file())
    cells = [p for p in csvs if looks_like_cells(header_of(p))]
    if not cells:
        return []
    return cells + [p for p in csvs if looks_like_positions(header_of(p))]


@cache
def dataset_workloads(path: Path = DATASETS_CSV) -> dict[str, str]:
    """data/datasets.csv: dataset (case-folded) → workload."""
    with open(path, encoding="utf-8", newline="") as fh:
        return {r["dataset"].strip().casefold(): r["workload"].strip() for r in csv.DictReader(fh)}


def _rows(path: Path, lines: Iterable[str], required: tuple[str, ...], shape: str) -> list[tuple[int, dict]]:
    reader = csv.reader(lines)
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise InputError(path, 1, f"unreadable CSV header: {exc}") from None
    names = [h.strip() for h in header]
    dup = [n for n, c in Counter(names).items() if c > 1 and n]
    if dup:
        raise InputError(path, 1, f"duplicate header {dup[0]!r}")
    missing = [c for c in required if c not in names]
    if missing:
        raise InputError(path, 1, f"missing columns {', '.join(missing)}; expected a {shape} with at least "
                         f"{', '.join(required)}")
    out = []
    while True:
        start = reader.line_num + 1  # a quoted field may span lines: errors point at the row's first line
        try:
            raw = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(path, start, f"malformed CSV: {exc}") from None
        if not any(v.strip() for v in raw):
            continue  # blank padding lines
        if len(raw) != len(names):
            spans = f" (a quote opened here runs to line {reader.line_num})" if reader.line_num > start else ""
            raise InputError(path, start, f"{len(raw)} fields, expected {len(names)} (as in the header){spans}")
        row = {n: v.strip() for n, v in zip(names, raw, strict=True)}
        for col in required:
            if not row[col]:
                raise InputError(path, start, f"empty {col!r}")
        out.append((start, row))
    if not out:
        raise InputError(path, 0, f"no rows below the header of this {shape}")
    return out


def _number(path: Path, line: int, row: dict, col: str, *, low: float | None = None, high: float | None = None,
            positive: bool = False) -> float | None:
    text = row.get(col, "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, line, f"{col} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(path, line, f"{col} {text!r} is not a finite number")
    if positive and value <= 0:
        raise InputError(path, line, f"{col} {text!r} must be above 0")
    if (low is not None and value < low) or (high is not None and value > high):
        raise InputError(path, line, f"{col} {text!r} outside {low:g}–{high:g}")
    return value


def _whole(path: Path, line: int, row: dict, col: str, low: int) -> int | None:
    text = row.get(col, "")
    if not text:
        return None
    if not text.isdigit() or int(text) < low:
        raise InputError(path, line, f"{col} {text!r} is not a whole number ≥ {low}")
    return int(text)


def _method(path: Path, line: int, row: dict) -> str:
    method = row["method"].lower()
    if method not in KNOWN_METHODS:
        raise InputError(path, line, f"method {row['method']!r}; expected one of {', '.join(KNOWN_METHODS)}")
    return method


def _depth(path: Path, line: int, row: dict, method: str) -> int:
    if method == "none":
        return 0
    text = row.get("depth", "")
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise InputError(path, line, f"depth {text!r} is not a whole number of 1–64")
    return int(text)


@dataclass(slots=True)
class _Cell:
    line: int
    key: CellKey
    gpu_count: int
    headline: dict[str, Any]
    source_url: str
    draft_model: str | None = None


def _cell_rows(path: Path, rows: list[tuple[int, dict]]) -> tuple[list[_Cell], list[str]]:
    mapping = dataset_workloads()
    cells: dict[str, _Cell] = {}
    baselines: dict[str, _Cell] = {}
    warnings: list[str] = []
    for line, row in rows:
        method = _method(path, line, row)
        depth = _depth(path, line, row, method)
        model = row["model"]
        family = row.get("model_family") or family_from_model(model) or "unknown"
        dataset = row.get("dataset") or None
        workload = (row.get("workload") or "").lower()
        if not workload:
            workload = mapping.get((dataset or "").casefold(), "")
            if not workload:
                raise InputError(path, line, f"empty 'workload' and dataset {dataset!r} is not in {DATASETS_CSV.name} "
                                 "(give the workload, or add the dataset with its workload and reason there)")
        gpu = row.get("gpu") or "unknown"
        concurrency = _whole(path, line, row, "concurrency", 1)  # empty: load not stated (NULL), never 0
        gpu_count = _whole(path, line, row, "gpu_count", 1) or 0
        _number(path, line, row, "temperature", low=0.0, high=10.0)
        out_tok = _number(path, line, row, "output_tok_s", positive=True)
        base_tok = _number(path, line, row, "baseline_output_tok_s", positive=True)
        speedup = _number(path, line, row, "speedup", positive=True)
        length = _number(path, line, row, "acceptance_length", low=1.0, high=65.0)
        rate = _number(path, line, row, "acceptance_rate", low=0.0, high=1.0)
        moe = row.get("moe", "").lower()
        if moe not in ("", "true", "false"):
            raise InputError(path, line, f"moe {row['moe']!r}; expected true or false")
        if method != "none" and length is not None and rate is not None and abs(1 + depth * rate - length) > 0.05:
            warnings.append(f"{path}:{line}: acceptance_length {length:g} is not 1 + depth × acceptance_rate "
                            f"({1 + depth * rate:.3f})")
        if speedup is not None and base_tok and abs(out_tok / base_tok - speedup) > SPEEDUP_TOLERANCE * speedup:
            warnings.append(f"{path}:{line}: speedup {speedup:g} differs from output_tok_s / baseline_output_tok_s "
                            f"({out_tok / base_tok:.3f}); the tok/s figures are kept")
        headline: dict[str, Any] = {"output_throughput": out_tok}
        if gpu_count:
            headline["output_throughput_per_gpu"] = out_tok / gpu_count
        if method != "none":
            headline.update({"acceptance_length": length, "acceptance_rate": rate})
        key = CellKey(method, depth, family, model, workload, gpu, concurrency, dataset=dataset)
        found = DRAFT_IN_NOTES.search(row.get("notes", ""))
        drafter = row.get("draft_model") or (found.group(1) if found else None)
        cell = _Cell(line, key, gpu_count, headline, row["source_url"], drafter if method != "none" else None)
        if method == "none":
            _baseline(path, baselines, cell, out_tok)
            continue
        if key.cell_id in cells:
            raise InputError(path, line, f"the same cell as line {cells[key.cell_id].line} ({model} {method}·{depth} "
                             f"{dataset or workload}); one row per model, method, depth, dataset and load")
        cells[key.cell_id] = cell
        if base_tok is not None:
            base_key = CellKey("none", 0, family, model, workload, gpu, concurrency, dataset=dataset)
            base_head = {"output_throughput": base_tok}
            if gpu_count:
                base_head["output_throughput_per_gpu"] = base_tok / gpu_count
            _baseline(path, baselines, _Cell(line, base_key, gpu_count, base_head, row["source_url"]), base_tok)
    return [*cells.values(), *baselines.values()], warnings


def _baseline(path: Path, baselines: dict[str, _Cell], cell: _Cell, value: float | None) -> None:
    """One ``none`` cell per (model, dataset, GPU, load): every row naming it must give the same figure."""
    have = baselines.get(cell.key.cell_id)
    if have is None:
        baselines[cell.key.cell_id] = cell
        return
    if have.headline["output_throughput"] != value:
        first = have.headline["output_throughput"]
        raise InputError(path, cell.line, f"baseline {value:g} tok/s differs from {first:g} "
                         f"on line {have.line} for the same model, dataset, GPU and load ({cell.key.model} "
                         f"{cell.key.dataset or cell.key.workload})")


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    """A cells table: one import run, its cells (with their ``none`` baselines)."""
    if opts.overrides:
        raise UsageError("--set does not apply to a published cells table (each row names its dimensions)")
    file_hash, lines = text_lines(path)
    rows = _rows(path, lines, CELL_REQUIRED, "published cells table")
    cells, warnings = _cell_rows(path, rows)
    sources = sorted({c.source_url for c in cells})
    engines = sorted({f"{r.get('engine', '')} {r.get('engine_version', '')}".strip() for _, r in rows} - {""})
    gpus = sorted({r.get("gpu", "") for _, r in rows} - {""})
    run = import_run(path, FORMAT, file_hash, gpu_model=gpus[0] if len(gpus) == 1 else "",
                     notes=f"published cells: {len(rows)} rows from {', '.join(sources)}")
    if len(engines) == 1:
        run.engine_version = engines[0]
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=run, warnings=warnings)
    parsed.cells = [ParsedCell(key=c.key, requests=pl.DataFrame(), window_s=None, gpu_count=c.gpu_count,
                               headline=c.headline, labels={"source_url": c.source_url, "draft_model": c.draft_model})
                    for c in cells]
    parsed.summary = {"rows": len(rows), "cells": sum(1 for c in cells if c.key.method != "none"),
                      "baselines": sum(1 for c in cells if c.key.method == "none"), "sources": sources,
                      "models": len({c.key.model for c in cells}), "load_not_stated": sum(
                          1 for c in cells if c.key.concurrency is None)}
    return parsed


def read_positions(path: Path, opts: ReadOptions) -> ParsedFile:
    """A per-position table, checked on its own; :func:`attach` matches its rows to a cells table's cells."""
    if opts.overrides:
        raise UsageError("--set does not apply to a published per-position table")
    file_hash, lines = text_lines(path)
    rows = _rows(path, lines, POS_REQUIRED, "per-position table")
    parsed_rows = []
    seen: dict[tuple, int] = {}
    for line, row in rows:
        method = _method(path, line, row)
        depth = _depth(path, line, row, method)
        position = _whole(path, line, row, "position", 1)
        if position is None or (method != "none" and position > depth):
            raise InputError(path, line, f"position {row['position']!r} is not a draft position of depth {depth}")
        rate = _number(path, line, row, "acceptance_rate", low=0.0, high=1.0)
        ident = (row["source_url"], row["model"], method, depth, row["dataset"], row.get("concurrency", ""))
        if (*ident, position) in seen:
            raise InputError(path, line, f"position {position} again (first on line {seen[(*ident, position)]})")
        seen[(*ident, position)] = line
        parsed_rows.append((line, ident, position, rate))
    run = import_run(path, POSITIONS_FORMAT, file_hash,
                     notes=f"per-position acceptance: {len(rows)} rows from "
                           f"{', '.join(sorted({r['source_url'] for _, r in rows}))}")
    parsed = ParsedFile(path=path, format=POSITIONS_FORMAT, file_hash=file_hash, run=run)
    parsed.summary = {"rows": len(rows), "cells": len({p[1] for p in parsed_rows})}
    parsed.pending = parsed_rows  # matched to cells by attach()
    return parsed


def attach(files: list[ParsedFile]) -> None:
    """Match every per-position file's rows to the cells of the cells tables of the same invocation; the rows
    land in ``positions`` under those cells' run and id. A row without its cell is an error on its line."""
    pos_files = [f for f in files if f.format == POSITIONS_FORMAT]
    if not pos_files:
        return
    index: dict[tuple, tuple[str, str]] = {}
    for f in files:
        if f.format != FORMAT:
            continue
        for c in f.cells:
            k = c.key
            conc = "" if k.concurrency is None else str(k.concurrency)
            index[(c.labels.get("source_url"), k.model, k.method, k.depth, k.dataset or "", conc)] = (
                f.run.run_id, k.cell_id)
    for f in pos_files:
        if not index:
            raise InputError(f.path, 0, "a per-position table is imported together with its cells table (give both "
                             "files, or their folder)")
        out = []
        counts: Counter = Counter()
        for line, ident, position, rate in f.pending:
            where = index.get(ident)
            if where is None:
                raise InputError(f.path, line, f"no row of the cells table for {ident[1]} {ident[2]}·{ident[3]} "
                                 f"{ident[4]} from {ident[0]}")
            out.append({"run_id": where[0], "cell_id": where[1], "position": position, "acceptance": rate})
            counts[where] += 1
        frame = pl.DataFrame(out, schema={"run_id": pl.String, "cell_id": pl.String, "position": pl.Int16,
                                          "acceptance": pl.Float64})
        for (run_id, cell_id), n in counts.items():  # positions 1..n, none missing
            got = sorted(frame.filter((pl.col("run_id") == run_id) & (pl.col("cell_id") == cell_id))["position"])
            if got != list(range(1, n + 1)):
                line = next(ln for ln, ident, _p, _r in f.pending if index.get(ident) == (run_id, cell_id))
                raise InputError(f.path, line, f"positions {got} of one cell are not 1…{n} without gaps")
        f.extra["positions"] = frame
