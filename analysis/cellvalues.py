"""One metric per cell with its 95 % bootstrap interval: the shared input of every dashboard chart.

Point values come from the ``cells`` table (or goodput under an SLO); intervals are percentile intervals
of the stored bootstrap replicates (goodput: binomial replicates, as in :mod:`analysis.winners`). The
replicate matrix is returned too, so ratios (speedup, GPU ratios) can get intervals of their own.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from analysis import frames, winners
from analysis.metrics import get_metric

LEVEL = 0.95


@dataclass(frozen=True, slots=True)
class Slo:
    """A goodput SLO: a request counts when TTFT ≤ ttft_ms and TPOT ≤ tpot_ms."""

    ttft_ms: float = 2000.0
    tpot_ms: float = 50.0


def percentile_bounds(reps: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise percentile interval of a (cells × replicates) matrix; NaN where too few replicates."""
    if reps.size == 0:
        n = reps.shape[0] if reps.ndim == 2 else 0
        return np.full(n, np.nan), np.full(n, np.nan)
    finite = np.isfinite(reps).sum(axis=1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (no replicates) become NaN bounds
        lo, hi = np.nanpercentile(np.where(np.isfinite(reps), reps, np.nan),
                                  [(1 - level) / 2 * 100, (1 + level) / 2 * 100], axis=1)
    enough = finite >= 10  # the winner rule's minimum: no interval from a handful of replicates
    return np.where(enough, lo, np.nan), np.where(enough, hi, np.nan)


def metric_values(con: duckdb.DuckDBPyConnection, f: frames.Filters, metric: str, slo: Slo | None = None
                  ) -> tuple[pl.DataFrame, np.ndarray]:
    """Cells under the filters with ``value``, ``ci_low``, ``ci_high`` of ``metric``, and the replicates."""
    m = get_metric(metric)
    cells = frames.cells(con, f)
    if m.name == "goodput":
        s = slo or Slo()
        values, reps = winners.goodput_frame(con, cells, s.ttft_ms, s.tpot_ms) if cells.height else (
            np.zeros(0), np.zeros((0, 0)))
    else:
        values = cells[m.value_column].fill_null(np.nan).to_numpy().astype(float)
        reps = frames.replicates(con, cells, m.value_column)
    lo, hi = percentile_bounds(reps) if cells.height else (np.zeros(0), np.zeros(0))
    out = cells.with_columns(pl.Series("value", values, dtype=pl.Float64),
                             pl.Series("ci_low", lo, dtype=pl.Float64),
                             pl.Series("ci_high", hi, dtype=pl.Float64))
    return out.with_columns(pl.col("value", "ci_low", "ci_high").fill_nan(None)), reps
