"""Human names for what the product shows: one candidate notation and human column titles.

A candidate is written ``method·depth`` (``dflash·5``) and the baseline ``none`` alone, in every chart, table,
CLI text line and export (issue 14: ``dflash:5`` and ``none:0`` are gone). Machine column names stay in Parquet
and JSON; tables on screen and in reports (:func:`human_table`) and CSV exports (:func:`human_columns`) use
:data:`COLUMN_TITLES`, the one mapping.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from analysis.metrics import METRICS  # the metrics' own labels and units, declared once there

SEP = "·"  # U+00B7 MIDDLE DOT between method and depth
# what the notation tests grep for: the retired `dflash:5` / `none:0` of any speculative method
OLD_NOTATION = r"\b(?:none|mtp|eagle|eagle3|dflash|dspark|ngram|suffix|medusa|draft_model):\d+\b"


def candidate(method: str | None, depth: int | None = None, mode: str | None = None,
              schedule: Sequence[Sequence[int]] | str | None = None) -> str:
    """``dflash·5``; the baseline is ``none`` (it has no depth); an unknown depth is ``?``. A candidate's mode
    (DESIGN, winner rule) shows in it: a depth schedule by its ranges ``mtp·1-4→5,5-64→3``, adaptive verification
    by its maximum depth ``dspark·≤8 adaptive``; ``fixed`` is the plain notation."""
    if method is None:
        return "?"
    if method == "none":
        return "none"
    if schedule and mode in (None, "schedule"):
        ranges = json.loads(schedule) if isinstance(schedule, str) else schedule
        return f"{method}{SEP}" + ",".join(f"{int(a)}-{int(b)}→{int(k)}" for a, b, k in ranges)
    if mode == "adaptive":
        return f"{method}{SEP}≤{'?' if depth is None else int(depth)} adaptive"
    return f"{method}{SEP}{'?' if depth is None else int(depth)}"


def candidate_of(x: Mapping) -> str:
    """:func:`candidate` of a JSON candidate (``method``, ``depth`` and, when not fixed, ``mode``/``schedule``)."""
    return candidate(x.get("method"), x.get("depth"), x.get("mode"), x.get("schedule"))


def same_candidate(a: Mapping, b: Mapping) -> bool:
    """Two JSON candidates name the same configuration: method, depth and mode (and schedule)."""
    return candidate_of(a) == candidate_of(b)


NOT_STATED = "not stated"  # the JSON ``load`` of a figure whose source gives no concurrency (concurrency: null)


def load(concurrency: int | None) -> str:
    """A cell's load in words: ``c=8``, or ``load not stated`` (never 0, never pooled with a stated load)."""
    return f"load {NOT_STATED}" if concurrency is None else f"c={int(concurrency)}"


def load_json(concurrency: int | None) -> str:
    """The JSON ``load`` field next to ``concurrency``: ``"not stated"`` when it is null, else ``"c=8"``."""
    return NOT_STATED if concurrency is None else f"c={int(concurrency)}"


def model_short(model: str | None) -> str:
    """A model id without its organisation (``Qwen/Qwen3.5-122B-A10B`` → ``Qwen3.5-122B-A10B``)."""
    return (model or "?").rsplit("/", 1)[-1]


def row_label(c: Mapping) -> str:
    """A heatmap row: the model (without its organisation) and the dataset when the source gave one —
    ``Qwen3.5-122B-A10B · GSM8K``; the family when a cell names no model."""
    name = model_short(c["model"]) if c.get("model") else str(c.get("family"))
    return f"{name} · {c['dataset']}" if c.get("dataset") else name


def group_label(c: Mapping, *, with_load: bool = True, with_gpu: bool = True) -> str:
    """A winners group in words: ``MI300X · Qwen3.5-122B-A10B · reasoning · GSM8K · load not stated`` (the
    model, not only its family: a group never mixes models; the dataset when the source gave one)."""
    parts = [c.get("gpu")] if with_gpu else []
    parts += [model_short(c.get("model")) if c.get("model") else c.get("family"), c.get("workload")]
    if c.get("dataset"):
        parts.append(c["dataset"])
    if with_load:
        parts.append(load(c.get("concurrency")))
    return " · ".join(str(p) for p in parts if p)


def of(c: Mapping) -> str:
    """The notation of a JSON candidate (``{"method": …, "depth": …}``)."""
    return candidate(c.get("method"), c.get("depth"))


def candidate_expr(method: str = "method", depth: str = "depth") -> pl.Expr:
    """:func:`candidate` as a polars expression (vectorised, for frames)."""
    shown_depth = pl.col(depth).cast(pl.Int64, strict=False).cast(pl.String).fill_null("?")  # as candidate()
    return (pl.when(pl.col(method) == "none").then(pl.lit("none"))
            .otherwise(pl.format("{}" + SEP + "{}", pl.col(method), shown_depth)))


def and_more(names: Sequence[str], shown: int = 2) -> str:
    """``a``; ``a and b``; ``a, b and 3 more`` — a list in plain words, the first ``shown`` named."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    if len(names) == 2 and shown >= 2:
        return f"{names[0]} and {names[1]}"
    if len(names) <= shown:
        return ", ".join(names[:-1]) + f" and {names[-1]}"
    return ", ".join(names[:shown]) + f" and {len(names) - shown} more"


# What a candidate cell may hold: `dflash·5`, `none`, a depth schedule `dflash·1-4→7,5-64→6`, adaptive
# verification `dspark·≤8 adaptive`, a tie mark.
CANDIDATE_PATTERN = (r"(?:none|[a-z][a-z0-9_]*·(?:\d+|\?|\d+-\d+→\d+(?:,\d+-\d+→\d+)*|≤\d+ adaptive))"
                     r"(?: \(tie\))?")
# Machine columns whose cells are candidates (the tests hold them to CANDIDATE_PATTERN).
CANDIDATE_COLUMNS = frozenset({"candidate", "config", "winner_a", "winner_b", "from", "to", "pick", "recommended",
                               "running", "observed_config"})


def _metric_titles() -> dict[str, str]:
    return {m.name: f"{m.label} ({m.unit})" if m.unit else m.label for m in METRICS.values()}


# Machine column → human title, for every table on screen, in a report and in a CSV (the one place: pages and
# reports add no dictionaries of their own). Metric columns take their label and unit from analysis.metrics. A
# column missing here gets a readable fallback (:func:`title`); the dashboard tests require an entry.
COLUMN_TITLES: dict[str, str] = {
    **_metric_titles(),
    # the cell and the candidate
    "gpu": "GPU", "gpu_model": "GPU model", "gpu_count": "GPUs", "gpus_per_server": "GPUs per server",
    "family": "Model family", "model_family": "Model family", "model": "Model", "moe": "MoE",
    "workload": "Workload", "concurrency": "Concurrency", "method": "Method", "depth": "Depth",
    "candidate": "Candidate", "config": "Configuration", "shard": "Shard", "segment": "Segment",
    "target": "Target", "n_requests": "Requests", "requests": "Requests", "share": "Share",
    # a value and its interval
    "value": "Value", "ci_low": "95 % CI low", "ci_high": "95 % CI high", "rank": "Rank", "unit": "Unit",
    "latency": "Latency", "speedup": "Speedup vs none", "baseline_value": "none's value",
    "load": "Load",
    "output_throughput_per_gpu": "Output throughput per GPU (tok/s)", "tok_s_per_watt": "Output per watt (tok/s/W)",
    "acceptance_source": "Acceptance from", "acceptance_suspect": "Acceptance suspect",
    "mean_concurrency": "Mean concurrency",
    # winners, gains and ties
    "gain_vs_none_pct": "Gain vs none (%)", "gain_vs_default_pct": "Gain vs default (%)",
    "gain_vs_static_pct": "Gain vs static depth (%)", "gain_vs_running_pct": "Gain vs running (%)",
    "gain_vs_deployed_pct": "Gain vs deployed (%)", "gain_pct": "Gain (%)", "gain_ci_pct": "Gain 95 % CI (%)",
    "gain_ci_low": "Gain 95 % CI low (%)", "gain_ci_high": "Gain 95 % CI high (%)",
    "schedule_gain_pct": "Schedule gain (%)", "default_gap_pct": "Default behind the pick (%)",
    "margin_pct": "Ahead of runner-up (%)", "keep_default": "Keep the default?",
    # the one vocabulary (docs/metrics.md "One vocabulary"): best, p_best, clear / tie / equivalent, pick
    "verdict": "Verdict", "best": "Best (point estimate)",
    "p_best": "Chance of being best (p)", "p_best_winner": "Best's chance of being best (p)",
    "clear": "Clear (p ≥ clear-at)", "tied": "Tied (p ≥ tie-at)", "equivalent": "Equivalent (within margin)",
    "headline": "Verdict · pick (p)", "chances": "Chance of being best (top)", "state": "Verdict (one word)",
    "gain": "Pick vs none [95 % interval]", "headline_a": "Verdict · pick (p) in A",
    "headline_b": "Verdict · pick (p) in B",
    "pick": "Pick", "pick_rule": "Why this pick", "tie_text": "Verdict in words", "top1": "#1 [95 % CI]",
    "gain_vs_none_text": "Gain vs none (with its certainty)", "gain_vs_none_ci_pct": "Gain vs none 95 % CI (%)",
    "pick_gain_text": "Pick vs default (with its certainty)", "uncertainty": "Certainty from",
    "gain_vs_default_text": "Gain vs default (with its certainty)",
    "top2": "#2 [95 % CI]", "top3": "#3 [95 % CI]", "origin": "Origin", "grid_edge": "Depth grid",
    "whole_window": "Whole window", "provenance": "Where it comes from", "method_changes": "Method changes?",
    "stops_paying_at": "Stops paying at (concurrency)", "recommended": "Recommended",
    "schedule": "Schedule (batch size: depth)", "mode": "Mode", "static_depth": "Static depth",
    # comparisons: A before B (two runs, two traces), winners per side
    "winner_a": "Winner in A", "winner_b": "Winner in B", "pick_a": "Pick in A", "pick_b": "Pick in B",
    "cell_verdict_a": "Verdict in A", "cell_verdict_b": "Verdict in B", "a": "A", "b": "B", "from": "From", "to": "To",
    "status": "Status", "change_pct": "Change B − A (%)", "significant": "Significant?", "changed": "Changed?",
    "within_tie": "Within a tie?", "gain_a_pct": "Gain in A (%)", "gain_b_pct": "Gain in B (%)",
    "share_a": "Share in A", "share_b": "Share in B", "delta_pp": "Change (points)",
    "vllm_args_b": "vLLM arguments (B)", "speculative_config": "Speculative config",
    # deploying
    "command": "Deploy command", "vllm_args": "vLLM arguments",
    # runs, files and traces
    "run_id": "Run", "cell_id": "Cell", "backend": "Backend", "engine_version": "Engine version",
    "engine": "Engine", "host": "Host", "started_at": "Started", "finished_at": "Finished", "source": "Source",
    "cells": "Cells", "cells_failed": "Failed cells", "importer": "Importer", "notes": "Notes",
    "file": "File", "format": "Format", "imported_at": "Imported", "file_hash": "File hash",
    "trace_id": "Trace", "name": "Name", "workload_mix": "Workload mix", "workload_assignment": "Workload from",
    "created_at": "Stored", "table_name": "Table", "rows": "Rows",
    # published reference results
    "source_url": "Source", "source_title": "Title", "published": "Published", "dataset": "Dataset",
    "temperature": "Temperature", "metric": "Metric",
    # production
    "benchmark": "Benchmark", "production": "Production", "drift_pct": "Drift (%)", "running": "Running",
    "targets": "Targets", "gap_pct": "Acceptance gap (%)", "deploy": "Deploy flag", "arm": "Arm",
    "position": "Draft position", "acceptance": "Acceptance", "expected": "Expected", "band_low": "Band low",
    "band_high": "Band high", "observed_config": "Observed config",
    "ts": "Time", "time": "Time", "kind": "Kind", "detail": "Detail", "why": "Why", "window": "Window",
    "benchmark_acceptance": "Benchmark acceptance", "production_acceptance": "Production acceptance",
    "expected_provenance": "Expected from", "draft_tokens": "Drafted tokens",
    "production_ci_low": "Production 95 % low", "production_ci_high": "Production 95 % high",
    "outside_band": "Outside the benchmark band",
}


def title(column: str) -> str:
    """The human title of a machine column name (fallback: underscores to spaces, first letter capital)."""
    if column in COLUMN_TITLES:
        return COLUMN_TITLES[column]
    text = column.replace("_pct", " (%)").replace("_ms", " (ms)").replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def human_columns(df: pl.DataFrame, extra: Mapping[str, str] | None = None) -> pl.DataFrame:
    """``df`` with human column titles (for a table on screen or a CSV; never for Parquet/JSON)."""
    titles = {**COLUMN_TITLES, **(extra or {})}
    new: dict[str, str] = {}
    used: set[str] = set()
    for c in df.columns:
        t = titles.get(c) or title(c)
        while t in used:  # two machine names mapping to one title: keep both columns
            t += " "
        used.add(t)
        new[c] = t
    return df.rename(new)


def human_table(df: pl.DataFrame, extra: Mapping[str, str] | None = None) -> pl.DataFrame:
    """``df`` as a reader sees it (on screen, in a report): ``method`` + ``depth`` merged into one candidate
    column in the notation (a row without a stated depth, e.g. a published one, is ``eagle3·?``), every column
    titled. ``extra`` titles columns whose title depends on the view (``winner_a`` → ``Winner on MI300X``)."""
    if {"method", "depth"} <= set(df.columns) and "candidate" not in df.columns:
        cand = candidate_expr().alias("candidate")
        at = df.columns.index("method")
        df = df.with_columns(cand).select(
            [*df.columns[:at], "candidate", *[c for c in df.columns[at:] if c not in ("method", "depth")]])
    return human_columns(df, extra)


def titles_for(columns: Iterable[str]) -> list[str]:
    return [title(c) for c in columns]
