"""GPU comparison: any two GPUs side by side — per-method ratios, whether the winner changes, efficiency.

Ratios compare each method at its own best depth on each GPU (what a user would deploy on each), as
B / A in the metric's good direction (> 1: GPU B is better). A ratio is of whole-server figures: a family may
run on a different number of GPUs per server on each GPU model (tensor parallelism), so for the rate metrics
the ratio per GPU is given too (ratio × GPUs on A / GPUs on B), with both GPU counts. Efficiency is output
tok/s per GPU and per watt of board power (data/gpu_specs.csv ``board_power_w``; nameplate power, not measured draw).
"""

from __future__ import annotations

from dataclasses import replace

import duckdb
import numpy as np
import polars as pl

from analysis import costmodel, frames, vocabulary
from analysis.cellvalues import Slo, metric_values
from analysis.labels import candidate
from analysis.metrics import get_metric

KEY = ("family", "model", "workload", "dataset", "concurrency")  # per model: a GPU ratio is one model's
PER_GPU_METRICS = ("output_throughput", "goodput")  # server rates that divide by the server's GPUs


def _best_per_method(cells: pl.DataFrame, higher: bool) -> pl.DataFrame:
    return (cells.filter(pl.col("value").is_not_null())
            .sort("value", descending=higher)
            .unique(subset=["gpu", *KEY, "method"], keep="first", maintain_order=True))


def ratios(con: duckdb.DuckDBPyConnection, f: frames.Filters, gpu_a: str, gpu_b: str,
           metric: str = "output_throughput", slo: Slo | None = None) -> pl.DataFrame:
    """Per family × workload × concurrency × method: best value on A and on B, their depths, ratio B/A."""
    m = get_metric(metric)
    both = replace(f, gpus=(gpu_a, gpu_b))
    cells, _ = metric_values(con, both, metric, slo)
    best = _best_per_method(cells, m.higher_is_better)
    a = best.filter(pl.col("gpu") == gpu_a).select(*KEY, "method", pl.col("depth").alias("depth_a"),
                                                   pl.col("value").alias("value_a"),
                                                   pl.col("gpu_count").alias("gpus_a"))
    b = best.filter(pl.col("gpu") == gpu_b).select(*KEY, "method", pl.col("depth").alias("depth_b"),
                                                   pl.col("value").alias("value_b"),
                                                   pl.col("gpu_count").alias("gpus_b"))
    out = a.join(b, on=[*KEY, "method"], how="inner", nulls_equal=True)
    ratio = (pl.col("value_b") / pl.col("value_a")) if m.higher_is_better else (pl.col("value_a") / pl.col("value_b"))
    per_gpu = (ratio * pl.col("gpus_a") / pl.col("gpus_b")) if metric in PER_GPU_METRICS else pl.lit(None, pl.Float64)
    return out.with_columns(ratio.alias("ratio"), per_gpu.alias("ratio_per_gpu")).sort(*KEY, "method")


def servers(ratios_frame: pl.DataFrame) -> pl.DataFrame:
    """GPUs per server on A and on B for each family of a :func:`ratios` frame (one row per family and pair)."""
    return ratios_frame.select("family", "gpus_a", "gpus_b").unique().sort("family", "gpus_a", "gpus_b")


def winner_changes(result_a: dict, result_b: dict) -> pl.DataFrame:
    """Join two winners() documents (one GPU each) group by group: does the winner change with the GPU?

    ``changed`` is True only when both winners are clear and differ; a tie on either side that contains the
    other GPU's winner is ``not clear`` rather than a change (no claim from noise). ``winner_*`` is each side's
    best point estimate; ``pick_*`` and ``cell_verdict_*`` are what the Winners heatmap shows for the same cell
    (the pick and clear / equivalent / tie), so the pages use one vocabulary (docs/metrics.md); ``headline_*`` is
    the cell's one line in that vocabulary (:func:`analysis.vocabulary.cell_words`: ``tie · pick mtp·5 (p 0.04)``)."""
    def rows(res: dict) -> pl.DataFrame:
        data = [{"family": c["family"], "model": c.get("model"), "workload": c["workload"],
                 "dataset": c.get("dataset"), "concurrency": c["concurrency"],
                 "method": c["winner"]["method"], "depth": c["winner"]["depth"], "clear": c["clear"],
                 "tied": [candidate(t['method'], t['depth']) for t in c["tied"]],
                 "pick": candidate(c["pick"]["method"], c["pick"]["depth"]) if c.get("pick") else None,
                 "cell_verdict": c.get("verdict"), "headline": vocabulary.cell_words(c).headline}
                for c in res["cells"]]
        return pl.DataFrame(data, schema={"family": pl.String, "model": pl.String, "workload": pl.String,
                                          "dataset": pl.String, "concurrency": pl.Int64,
                                          "method": pl.String, "depth": pl.Int64, "clear": pl.Boolean,
                                          "tied": pl.List(pl.String), "pick": pl.String,
                                          "cell_verdict": pl.String, "headline": pl.String})

    a, b = rows(result_a), rows(result_b)
    j = a.join(b, on=list(KEY), how="inner", suffix="_b", nulls_equal=True)
    out = []
    for r in j.iter_rows(named=True):
        wa, wb = candidate(r['method'], r['depth']), candidate(r['method_b'], r['depth_b'])
        same = wa == wb
        overlap = wa in (r["tied_b"] or []) or wb in (r["tied"] or [])
        verdict = "same" if same else ("changes" if r["clear"] and r["clear_b"] and not overlap else "not clear")
        out.append({"family": r["family"], "model": r["model"], "workload": r["workload"],
                    "dataset": r["dataset"], "concurrency": r["concurrency"], "winner_a": wa, "winner_b": wb,
                    "method_changes": r["method"] != r["method_b"], "verdict": verdict,
                    "pick_a": r["pick"], "pick_b": r["pick_b"],
                    "cell_verdict_a": r["cell_verdict"], "cell_verdict_b": r["cell_verdict_b"],
                    "headline_a": r["headline"], "headline_b": r["headline_b"]})
    return pl.DataFrame(out, schema={"family": pl.String, "model": pl.String, "workload": pl.String,
                                     "dataset": pl.String, "concurrency": pl.Int64, "winner_a": pl.String,
                                     "winner_b": pl.String, "method_changes": pl.Boolean, "verdict": pl.String,
                                     "pick_a": pl.String, "pick_b": pl.String,
                                     "cell_verdict_a": pl.String, "cell_verdict_b": pl.String,
                                     "headline_a": pl.String, "headline_b": pl.String})


def efficiency(con: duckdb.DuckDBPyConnection, f: frames.Filters) -> pl.DataFrame:
    """Best-depth output tok/s per GPU and per watt for each GPU × family × workload × concurrency × method."""
    cells = frames.cells(con, f)
    specs = costmodel.gpu_specs()
    power = {g: s.power_w for g, s in specs.items()}
    best = (cells.sort("output_throughput_per_gpu", descending=True, nulls_last=True)
            .unique(subset=["gpu", *KEY, "method"], keep="first", maintain_order=True))
    watts = pl.Series("board_power_w", [power.get(g, np.nan) for g in best["gpu"].to_list()], dtype=pl.Float64)
    out = best.select("gpu", *KEY, "method", "depth", "output_throughput_per_gpu", "gpu_count", "backend"
                      ).with_columns(watts)
    return out.with_columns((pl.col("output_throughput_per_gpu") / pl.col("board_power_w")).fill_nan(None)
                            .alias("tok_s_per_watt")).sort("gpu", *KEY, "method")
