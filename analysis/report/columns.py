"""Human column titles for report tables (machine names stay in Parquet and JSON exports), and one candidate
column in the ``dflash·5`` notation instead of separate method and depth columns."""

from __future__ import annotations

import polars as pl

TITLES = {
    "gpu": "GPU", "family": "Model family", "workload": "Workload", "concurrency": "Concurrency",
    "shard": "Shard", "requests": "Requests", "candidate": "Candidate", "method": "Method", "depth": "Depth",
    "value": "Value", "gain_vs_none_pct": "Gain vs none (%)", "gain_vs_default_pct": "Gain vs default (%)",
    "gain_ci_low": "95 % interval low (%)", "gain_ci_high": "95 % interval high (%)", "verdict": "Verdict",
    "tied": "Tied with", "top1": "Best", "top2": "Second", "top3": "Third", "origin": "Origin",
    "command": "Deploy command", "grid_edge": "Edge of the depth grid", "whole_window": "Whole-window value",
    "provenance": "Where the numbers come from", "keep_default": "Keep the default", "clear": "Clear winner",
    "output_throughput": "Output throughput (tok/s)", "p99_e2e_ms": "p99 end-to-end latency (ms)",
    "mean_concurrency": "Mean concurrency", "config": "Configuration", "schedule_gain_pct": "Schedule gain (%)",
    "vllm_args": "vLLM arguments", "run_id": "Run", "backend": "Backend", "engine_version": "Engine version",
    "gpu_model": "GPU model", "host": "Host", "started_at": "Started", "source": "Source", "cells": "Cells",
    "share": "Share", "moe": "MoE", "gpu_count": "GPUs per server", "source_url": "Source URL",
    "benchmark": "Benchmark", "production": "Production", "drift_pct": "Drift (%)",
}


def title(column: str) -> str:
    """The human title of a machine column name (unknown names: underscores become spaces, first letter up)."""
    if column in TITLES:
        return TITLES[column]
    text = column.replace("_pct", " (%)").replace("_ms", " (ms)").replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def human_table(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` for a reader: method + depth merged into one ``Candidate`` column (``dflash·5`` / ``none``),
    every column titled for humans."""
    if {"method", "depth"} <= set(frame.columns):
        cand = (pl.when(pl.col("method") == "none").then(pl.lit("none"))
                .when(pl.col("depth").is_null()).then(pl.col("method"))  # a published row without its depth
                .otherwise(pl.format("{}·{}", "method", "depth")).alias("candidate"))
        at = frame.columns.index("method")
        frame = frame.with_columns(cand).select(
            [*frame.columns[:at], "candidate", *[c for c in frame.columns[at:] if c not in ("method", "depth")]])
    return frame.rename({c: title(c) for c in frame.columns})
