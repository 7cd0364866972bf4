"""Synthetic spectune exports for benchmarks: N request rows of a realistic matrix, as a Parquet export folder.

Owns :func:`make_export`. The matrix is the embedded default (``runner/matrices/default.toml``: 6 methods ×
depths 2–5 × 4 families × 3 workloads × 2 GPUs × 3 loads = 1,512 cells); each cell gets ``N / 1512``
requests drawn (with replacement) from that cell's simulated requests in ``data/default/`` with a small
multiplicative jitter on the latencies, so per-cell distributions (long TTFT tails, output-length mix,
acceptance counts) are the simulator's own. The cells' headline columns are recomputed from the generated
rows (throughput = Σ output tokens / window, window scaled with the request count, p50/p90/p99 from the rows),
so a from-scratch computation over the raw rows (the pandas baseline) and the store agree on point values.
The run is labelled backend ``sim``: these numbers are simulated. The folder has the shape of
``ingest.store.export_tables`` (``runs``, ``cells``, ``positions``, ``requests``) and imports with
``python -m ingest results DIR``. Fully vectorised (no per-row or per-cell Python).

    python benchmarks/generate.py N OUT_DIR [--seed 0] [--parts K]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.default_data import read_default_tables

TABLES = ("runs", "cells", "positions", "requests")
JITTER_SIGMA = 0.05  # lognormal sigma of the per-request latency jitter
STEADY = ("steady_output_throughput", "steady_output_throughput_per_gpu", "steady_window_s", "steady_requests",
          "steady_fallback")


def _run_id(n: int) -> str:
    return f"bench-{n}"


def make_tables(n: int, seed: int = 0, part: int = 0, parts: int = 1) -> dict[str, pl.DataFrame]:
    """The four export tables with about ``n`` request rows (a multiple of the cell count, at least one each).

    ``part`` of ``parts``: only every ``parts``-th cell from ``part`` on (same requests per cell, same run), so a
    store too big to generate and land at once is built from disjoint exports (``make_export(..., parts=k)``)."""
    base = read_default_tables()
    cells = base["cells"].sort("cell_id")
    src = base["requests"].sort("cell_id", "request_index")
    per_cell = max(1, -(-n // cells.height))  # at least n rows
    run_id = _run_id(per_cell * cells.height)
    counts = src.group_by("cell_id", maintain_order=True).len()["len"].to_numpy().astype(np.int64)
    offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)[:-1]])
    rng = np.random.default_rng(seed if parts == 1 else [seed, part])
    mine = np.arange(part, cells.height, parts)
    cell_of = np.repeat(mine, per_cell)
    pick = offsets[cell_of] + (rng.random(cell_of.size) * counts[cell_of]).astype(np.int64)
    jitter = rng.lognormal(0.0, JITTER_SIGMA, (2, cell_of.size))
    reqs = src.select(pl.exclude("run_id", "request_index"))[pick]
    out_tok = pl.col("output_tokens")
    reqs = reqs.with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.Series("request_index", np.tile(np.arange(per_cell, dtype=np.int32), mine.size)),
        (pl.col("ttft_ms") * jitter[0]).alias("ttft_ms"),
        (pl.col("e2e_ms") * jitter[1]).alias("e2e_ms"),
    ).with_columns(
        pl.when(out_tok > 1).then((pl.col("e2e_ms") - pl.col("ttft_ms")) / (out_tok - 1)).otherwise(None)
        .alias("tpot_ms"),
    )
    scale = per_cell / np.maximum(counts, 1)
    windows = cells["window_s"].to_numpy() * scale
    cells = cells[mine]
    # Start times spread over the scaled window (closed loop: more requests, proportionally longer window).
    reqs = reqs.with_columns((pl.Series(rng.random(cell_of.size)) * pl.Series(windows[cell_of])).alias("start_s"))
    reqs = reqs.select("run_id", "cell_id", "request_index", "input_tokens", "output_tokens", "ttft_ms", "tpot_ms",
                       "e2e_ms", "start_s", "drafted_tokens", "accepted_tokens", "ok", "error")
    stats = reqs.group_by("cell_id", maintain_order=True).agg(
        pl.len().cast(pl.Int32).alias("n_requests"),
        pl.col("output_tokens").sum().cast(pl.Float64).alias("output_tokens"),
        *[pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(a)
          for c, a in (("drafted_tokens", "draft_tokens"), ("accepted_tokens", "accepted_tokens"))],
        *[pl.col(c).quantile(q / 100, "linear").alias(f"p{q}_{c}") for c in ("ttft_ms", "tpot_ms", "e2e_ms")
          for q in (50, 90, 99)],
        *[pl.col(c).mean().alias(f"mean_{c}") for c in ("ttft_ms", "tpot_ms", "e2e_ms")],
    )
    new = cells.drop(*[c for c in stats.columns if c != "cell_id"]).join(stats, on="cell_id", how="left")
    new = new.with_columns(
        pl.lit(run_id).alias("run_id"), pl.Series("window_s", windows[mine]),
        pl.Series("_depth_f", cells["depth"].cast(pl.Float64)),
    ).with_columns(
        (pl.col("output_tokens") / pl.col("window_s")).alias("output_throughput"),
        (pl.col("n_requests") / pl.col("window_s")).alias("request_throughput"),
        pl.when(pl.col("draft_tokens") > 0).then(pl.col("draft_tokens") / pl.col("_depth_f")).alias("drafts"),
    ).with_columns(
        (pl.col("output_throughput") / pl.col("gpu_count")).alias("output_throughput_per_gpu"),
        (pl.col("accepted_tokens") / pl.col("draft_tokens")).alias("acceptance_rate"),
        (1.0 + pl.col("accepted_tokens") / pl.col("drafts")).alias("acceptance_length"),
    ).with_columns(  # start times are drawn at random, not a closed loop: no steady window to find (flagged)
        pl.col("output_throughput").alias("steady_output_throughput"),
        pl.col("output_throughput_per_gpu").alias("steady_output_throughput_per_gpu"),
        pl.lit(None, pl.Float64).alias("steady_window_s"), pl.lit(None, pl.Int32).alias("steady_requests"),
        pl.lit("benchmark export: synthetic start times, whole window").alias("steady_fallback"),
    ).select(*dict.fromkeys([*cells.columns, *STEADY]))
    runs = base["runs"].with_columns(
        pl.lit(run_id).alias("run_id"),
        pl.lit(f"benchmarks/generate.py: {per_cell} requests per cell resampled from the default simulated run")
        .alias("notes"))
    positions = base["positions"].filter(pl.col("cell_id").is_in(cells["cell_id"].implode())).with_columns(
        pl.lit(run_id).alias("run_id"))
    return {"runs": runs, "cells": new, "positions": positions, "requests": reqs}


def make_export(n: int, out: str | Path, seed: int = 0, parts: int = 1) -> dict[str, int]:
    """Write the export folder ``out`` (created) with about ``n`` request rows; returns rows per table.

    ``parts`` > 1: ``out/part00`` … one export folder per part (disjoint cells, generated one at a time, so the
    peak memory is a part's), each imported with its own ``ingest results``."""
    out = Path(out)
    total: dict[str, int] = dict.fromkeys(TABLES, 0)
    for part in range(parts):
        folder = out if parts == 1 else out / f"part{part:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        tables = make_tables(n, seed, part, parts)
        for name in TABLES:
            tables[name].write_parquet(folder / f"{name}.parquet", compression="zstd", compression_level=1)
            total[name] += tables[name].height
        del tables
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--parts", type=int, default=1, help="disjoint exports of every k-th cell, in OUT_DIR/partNN")
    args = ap.parse_args(argv)
    print(make_export(args.n, args.out, args.seed, args.parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
