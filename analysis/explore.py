"""Explore: any metric against depth per method (with intervals), and acceptance by draft position.

``none`` has no depth; it is returned at every depth of the other methods so a chart can draw it as the
flat baseline it is. Per-position acceptance is vLLM's cumulative r_i; the conditional rate
p_i = r_i / r_(i-1) comes from :mod:`analysis.acceptance`.
"""

from __future__ import annotations

import duckdb
import numpy as np
import polars as pl

from analysis import acceptance, frames, labels
from analysis.cellvalues import Slo, metric_values

KEEP = ("gpu", "family", "model", "dataset", "row", "workload", "concurrency", "method", "depth", "value", "ci_low",
        "ci_high", "backend", "run_id", "cell_id")


def _with_row(cells: pl.DataFrame) -> pl.DataFrame:
    """The facet row of a cell: its model (and dataset where given), never the family alone — two models of one
    family are two rows (analysis.labels.row_label)."""
    rows = [labels.row_label(r) for r in cells.select("family", "model", "dataset").iter_rows(named=True)]
    return cells.with_columns(pl.Series("row", rows, dtype=pl.String))


def by_depth(con: duckdb.DuckDBPyConnection, f: frames.Filters, metric: str, slo: Slo | None = None
             ) -> pl.DataFrame:
    """One row per (cell, depth): the metric with its interval; the baseline repeated at each depth."""
    cells, _ = metric_values(con, f, metric, slo)
    cells = _with_row(cells.filter(pl.col("mode") == "fixed")).select(KEEP)  # a depth axis: fixed depths only
    spec = cells.filter(pl.col("method") != "none")
    base = cells.filter(pl.col("method") == "none")
    if base.height == 0 or spec.height == 0:
        return cells.with_columns(pl.lit(False).alias("baseline"))
    depths = spec.select(pl.col("depth").unique().sort())
    base = base.drop("depth").join(depths, how="cross").select(KEEP)
    return pl.concat([spec.with_columns(pl.lit(False).alias("baseline")),
                      base.with_columns(pl.lit(True).alias("baseline"))])


def by_position(con: duckdb.DuckDBPyConnection, f: frames.Filters) -> pl.DataFrame:
    """Per cell and draft position: cumulative acceptance r_i and conditional acceptance p_i."""
    cells = frames.cells(con, f).filter((pl.col("method") != "none") & (pl.col("mode") == "fixed"))
    pos = frames.positions(con, cells)
    if pos.height == 0:
        return pl.DataFrame(schema={"gpu": pl.String, "family": pl.String, "model": pl.String, "dataset": pl.String,
                                    "row": pl.String, "workload": pl.String, "concurrency": pl.Int32,
                                    "method": pl.String, "depth": pl.Int32, "position": pl.Int16,
                                    "acceptance": pl.Float64, "conditional": pl.Float64})
    parts = []
    for _key, grp in pos.group_by(["cell_id"], maintain_order=True):
        r = grp["acceptance"].to_numpy()
        parts.append(grp.with_columns(pl.Series("conditional", acceptance.conditional_from_cumulative(r))))
    pos = pl.concat(parts)
    dims = _with_row(cells).select("run_id", "cell_id", "gpu", "family", "model", "dataset", "row", "workload",
                                   "concurrency", "method", "depth")
    out = pos.join(dims, on=["run_id", "cell_id"])
    return out.select("gpu", "family", "model", "dataset", "row", "workload", "concurrency", "method", "depth",
                      "position", "acceptance", "conditional").sort(
        "gpu", "family", "row", "workload", "concurrency", "method", "depth", "position", nulls_last=True)


def expected_tau(conditional: list[float]) -> float:
    """τ implied by a position profile (a check the drill-down shows next to the measured τ)."""
    return acceptance.expected_tokens(np.asarray(conditional, dtype=float))
