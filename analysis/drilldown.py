"""Drill-down of one heatmap cell (GPU × family × workload × concurrency): everything behind its winner.

Three views: every method × depth with the metric's 95 % interval (ranked), acceptance by draft position
for every speculative candidate, and the per-request latency distribution of the leading candidates plus ``none``
(the distribution a p99 summarises, binned in DuckDB).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import duckdb
import polars as pl

from analysis import distribution, explore, frames, model_provenance
from analysis.cellvalues import Slo, metric_values
from analysis.labels import candidate
from analysis.metrics import get_metric


@dataclass(frozen=True, slots=True)
class Group:
    gpu: str
    family: str
    workload: str
    concurrency: int | None  # None: the load is not stated (published figures)
    model: str | None = None  # one model's candidates (a group never mixes models)
    dataset: str | None = None

    def filters(self, base: frames.Filters | None = None) -> frames.Filters:
        return replace(base or frames.Filters(), gpus=(self.gpu,), families=(self.family,),
                       workloads=(self.workload,), concurrency=(self.concurrency,),
                       models=(self.model,) if self.model else (), datasets=(self.dataset,) if self.dataset else ())


def candidates(con: duckdb.DuckDBPyConnection, group: Group, metric: str, base: frames.Filters | None = None,
               slo: Slo | None = None) -> pl.DataFrame:
    """Every (method, depth) of the group with value, interval and rank (1 = best point estimate)."""
    m = get_metric(metric)
    cells, _ = metric_values(con, group.filters(base), metric, slo)
    cells = cells.filter(pl.col("synthetic_rates").is_null())  # cost cells at a given acceptance: not candidates
    cells = cells.select("method", "depth", "value", "ci_low", "ci_high", "acceptance_length",
                         "acceptance_rate", "output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms",
                         "n_requests", "acceptance_source", "acceptance_suspect", "backend", "run_id", "cell_id")
    ranked = cells.sort("value", descending=m.higher_is_better, nulls_last=True)
    # where each candidate's numbers come from (measured run, or the model's fitted/borrowed/prior parts)
    prov = [model_provenance.for_row({**r, "family": group.family, "workload": group.workload})["summary"]
            for r in ranked.select("method", "depth", "backend", "run_id").iter_rows(named=True)]
    ranked = ranked.with_columns(pl.Series("provenance", prov, dtype=pl.String))
    return ranked.with_row_index("rank", offset=1)


def suspects(ranked: pl.DataFrame) -> list[tuple[str, str]]:
    """(candidate label, reason) for every candidate whose per-request acceptance disagreed with its counters."""
    rows = ranked.filter(pl.col("acceptance_suspect").is_not_null()).iter_rows(named=True)
    return [(candidate_label(r["method"], r["depth"]), str(r["acceptance_suspect"])) for r in rows]


def positions(con: duckdb.DuckDBPyConnection, group: Group, base: frames.Filters | None = None) -> pl.DataFrame:
    return explore.by_position(con, group.filters(base))


def candidate_label(method: str, depth: int | None) -> str:
    """``dflash·5``; ``none`` alone for no speculation (:func:`analysis.labels.candidate`)."""
    return candidate(method, depth)


def latency_summary(con: duckdb.DuckDBPyConnection, ranked: pl.DataFrame, top: int = 3) -> pl.DataFrame:
    """Per-request TTFT, TPOT and e2e of the ``top`` ranked candidates and the ``none`` baseline, summarised in
    DuckDB (box statistics and binned outliers, :mod:`analysis.distribution`): never the request rows."""
    picks = pl.concat([ranked.filter(pl.col("method") != "none").head(top), ranked.filter(pl.col("method") == "none")])
    picks = picks.unique(subset=["cell_id"], maintain_order=True)
    labels = [candidate_label(m, d) for m, d in zip(picks["method"], picks["depth"], strict=True)]
    return distribution.latency_distribution(
        con, picks.select("run_id", "cell_id", "method").with_columns(pl.Series("candidate", labels, pl.String)))
