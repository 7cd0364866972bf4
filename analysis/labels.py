"""Human names for what the product shows: one candidate notation and human column titles.

A candidate is written ``method·depth`` (``dflash·5``) and the baseline ``none`` alone, in every chart, table,
CLI text line and export (issue 14: ``dflash:5`` and ``none:0`` are gone). Machine column names stay in Parquet
and JSON; tables on screen and CSV exports use :data:`COLUMN_TITLES` through :func:`human_columns`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import polars as pl

SEP = "·"  # U+00B7 MIDDLE DOT between method and depth
# what the notation tests grep for: the retired `dflash:5` / `none:0` of any speculative method
OLD_NOTATION = r"\b(?:none|mtp|eagle|eagle3|dflash|dspark|ngram|suffix|medusa|draft_model):\d+\b"


def candidate(method: str | None, depth: int | None = None) -> str:
    """``dflash·5``; the baseline is ``none`` (it has no depth); an unknown depth is ``?``."""
    if method is None:
        return "?"
    if method == "none":
        return "none"
    return f"{method}{SEP}{'?' if depth is None else int(depth)}"


def of(c: Mapping) -> str:
    """The notation of a JSON candidate (``{"method": …, "depth": …}``)."""
    return candidate(c.get("method"), c.get("depth"))


def candidate_expr(method: str = "method", depth: str = "depth") -> pl.Expr:
    """:func:`candidate` as a polars expression (vectorised, for frames)."""
    return (pl.when(pl.col(method) == "none").then(pl.lit("none"))
            .otherwise(pl.format("{}" + SEP + "{}", pl.col(method), pl.col(depth))))


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


# Machine column → human title (tables and CSV exports). A column missing here keeps a readable fallback.
COLUMN_TITLES: dict[str, str] = {
    "gpu": "GPU", "gpu_count": "GPUs per server", "family": "Model family", "workload": "Workload",
    "concurrency": "Concurrency", "method": "Method", "depth": "Depth", "candidate": "Candidate",
    "value": "Value", "ci_low": "95 % CI low", "ci_high": "95 % CI high", "rank": "Rank",
    "gain_vs_none_pct": "Gain vs none (%)", "gain_vs_default_pct": "Gain vs default (%)",
    "gain_ci_pct": "Gain 95 % CI (%)", "keep_default": "Keep the default?", "verdict": "Verdict",
    "tied": "Tied set", "pick": "Sensible pick", "pick_rule": "Why this pick", "tie_text": "Tie",
    "top1": "#1 [95 % CI]", "top2": "#2 [95 % CI]", "top3": "#3 [95 % CI]", "origin": "Origin",
    "command": "Deploy command", "grid_edge": "Depth grid", "whole_window": "Whole window",
    "provenance": "Where it comes from", "backend": "Backend", "run_id": "Run", "cell_id": "Cell",
    "clear": "Clear winner", "margin_pct": "Ahead of runner-up (%)", "baseline_value": "none's value",
    "output_throughput": "Output throughput (tok/s)", "p99_e2e_ms": "p99 end-to-end (ms)",
    "p99_tpot_ms": "p99 TPOT (ms)", "p99_ttft_ms": "p99 TTFT (ms)", "acceptance_rate": "Acceptance rate",
    "acceptance_length": "Acceptance length τ", "goodput": "Goodput (req/s)", "shard": "Shard",
    "requests": "Requests", "share": "Share", "default_gap_pct": "Default behind the pick (%)",
    "equivalent": "Equivalent (within margin)", "model": "Model", "speedup": "Speedup vs none",
    "acceptance_source": "Acceptance from", "acceptance_suspect": "Acceptance suspect",
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


def titles_for(columns: Iterable[str]) -> list[str]:
    return [title(c) for c in columns]
