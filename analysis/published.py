"""The published reference table (data/published_results.csv) as a frame, and its overlay on our metrics.

Each published row keeps its source URL and title. Only rows whose metric means the same thing as one of
ours (acceptance length, acceptance rate, output throughput) and that state an integer depth can be placed
on a metric-vs-depth chart; an overlay matches on family, method and workload where the row has them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import polars as pl

from analysis.costmodel import DATA

PUBLISHED = DATA / "published_results.csv"
# published metric name → our metric name (same definition; see analysis/metrics.py)
METRIC_MAP: dict[str, str] = {
    "acceptance_length": "acceptance_length",
    "acceptance_rate": "acceptance_rate",
    "output_throughput_tok_s": "output_throughput",
}
# published workload labels that stand for ours (math is the reasoning workload's prompt set)
WORKLOAD_MAP: dict[str, str] = {"code": "code", "chat": "chat", "reasoning": "reasoning", "math": "reasoning"}


@cache
def _read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema_length=0)  # all strings: the table mixes "3", "3-8", "up to 200"


def table(path: Path = PUBLISHED) -> pl.DataFrame:
    """The whole published table (strings as written) with its CSV line number."""
    return _read(path).with_row_index("line", offset=2)


def overlay(metric: str, *, families: tuple[str, ...] = (), workloads: tuple[str, ...] = (),
            methods: tuple[str, ...] = (), path: Path = PUBLISHED) -> pl.DataFrame:
    """Published points for ``metric`` with integer depth: family, workload, method, depth, value, source."""
    wanted = [k for k, v in METRIC_MAP.items() if v == metric]
    if not wanted:
        return pl.DataFrame(schema={"family": pl.String, "workload": pl.String, "method": pl.String,
                                    "depth": pl.Int64, "value": pl.Float64, "gpu": pl.String,
                                    "source_url": pl.String, "source_title": pl.String, "unit": pl.String})
    t = table(path)
    # per-position rates are not a cell's overall rate
    t = t.filter(pl.col("metric").is_in(wanted) & ~pl.col("notes").fill_null("").str.to_lowercase()
                 .str.contains("position"))
    t = t.with_columns(
        pl.col("depth").str.strip_chars().cast(pl.Int64, strict=False).alias("depth"),
        pl.col("value").cast(pl.Float64, strict=False).alias("value"),
        pl.col("workload").replace_strict(WORKLOAD_MAP, default=None).alias("workload"),
        pl.col("model_family").alias("family"),
    ).filter(pl.col("depth").is_not_null() & pl.col("value").is_not_null() & pl.col("workload").is_not_null())
    if metric == "output_throughput":  # only totals are comparable; per-GPU/per-user figures are not
        t = t.filter(pl.col("unit") == "tok/s")
    for col, values in (("family", families), ("workload", workloads), ("method", methods)):
        if values:
            t = t.filter(pl.col(col).is_in(list(values)))
    return t.select("family", "workload", "method", "depth", "value", "gpu", "source_url", "source_title",
                    "unit", "line")


OVERLAY_MARGIN = 0.25  # a published point this far (as a share of the measured span) outside it is still drawn


def split_by_range(points: pl.DataFrame, measured: pl.DataFrame, margin: float = OVERLAY_MARGIN
                   ) -> tuple[pl.DataFrame, pl.DataFrame, tuple[float, float] | None]:
    """(drawn, left out, measured range): the published points that fall inside the range of the measured
    values and intervals (widened by ``margin`` of its span), and those that do not. A published setup far
    from ours (a bigger server, another load) would otherwise set the chart's shared scale and flatten every
    measured line; the ones left out are named under the chart instead."""
    cols = [c for c in ("value", "ci_low", "ci_high") if c in measured.columns]
    vals = measured.select(pl.concat_list(cols).alias("v")).explode("v").drop_nulls()["v"] if cols else None
    if points.height == 0 or vals is None or vals.len() == 0:
        return points, points.clear(), None
    lo, hi = float(vals.min()), float(vals.max())
    pad = (hi - lo) * margin if hi > lo else abs(hi) * margin
    inside = pl.col("value").is_between(lo - pad, hi + pad)
    return points.filter(inside), points.filter(~inside), (lo, hi)
