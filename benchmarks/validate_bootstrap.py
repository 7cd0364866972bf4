"""How close the large-cell bootstrap scheme is to the exact Poisson bootstrap, on realistic cells.

Owns :func:`compare`: for cells of the default simulated run resampled to ``n`` requests (the benchmark
generator's rows), draw ``replicates`` replicates with the exact scheme (one Poisson weight per request and
replicate) and with the large-n scheme (normal limit for sums, exact tail window for p99s), and report per
metric the 2.5th and 97.5th percentiles of both replicate distributions and their difference relative to
the exact interval's width. Monte-Carlo noise alone gives a few percent at 2,000 replicates.

    python benchmarks/validate_bootstrap.py [--n 5000] [--replicates 2000] [--cells 12]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate import make_tables
from ingest import cellstats, store

METRICS = ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate")


def _cells(n: int, count: int, seed: int) -> list[tuple[dict[str, np.ndarray], float, int, str]]:
    import polars as pl

    tables = make_tables(n * 1512, seed)
    cells = tables["cells"].filter(pl.col("method") != "none").sample(count, seed=seed)
    reqs = store.keep_cells(tables["requests"], cells.select("run_id", "cell_id"))
    out = []
    for row in cells.iter_rows(named=True):
        part = reqs.filter(pl.col("cell_id") == row["cell_id"])
        out.append((cellstats.request_arrays(part), row["output_throughput"], row["depth"], row["cell_id"]))
    return out


def _rel(a: np.ndarray, ref: np.ndarray) -> float:
    lo_r, hi_r = np.percentile(ref, [2.5, 97.5])
    lo, hi = np.percentile(a, [2.5, 97.5])
    return float(max(abs(lo - lo_r), abs(hi - hi_r)) / (hi_r - lo_r)) if hi_r > lo_r else 0.0


def compare(n: int = 5000, replicates: int = 2000, cells: int = 12, seed: int = 1) -> dict:
    """Per metric, median and worst over the cells of |Δ interval endpoint| / exact interval width: the large-n
    scheme against the exact bootstrap, and — the Monte-Carlo noise floor — the exact bootstrap against itself
    with another seed."""
    rel: dict[str, list[float]] = {m: [] for m in METRICS}
    noise: dict[str, list[float]] = {m: [] for m in METRICS}
    for cols, tput, depth, cell_id in _cells(n, cells, seed):
        s = cellstats.seed_for(cell_id)
        exact = cellstats.bootstrap_arrays(cols, tput, depth=depth, seed=s, replicates=replicates, exact=True)
        again = cellstats.bootstrap_arrays(cols, tput, depth=depth, seed=s + 2, replicates=replicates, exact=True)
        fast = cellstats.bootstrap_arrays(cols, tput, depth=depth, seed=s + 1, replicates=replicates, exact=False)
        for m in METRICS:
            rel[m].append(_rel(fast[m], exact[m]))
            noise[m].append(_rel(again[m], exact[m]))

    def summary(d: dict[str, list[float]]) -> dict:
        return {m: {"median": round(float(np.median(v)), 4), "max": round(float(np.max(v)), 4)} for m, v in d.items()}

    return {"n": n, "replicates": replicates, "cells": cells, "large_n_vs_exact": summary(rel),
            "exact_vs_exact_other_seed": summary(noise)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--replicates", type=int, default=2000)
    ap.add_argument("--cells", type=int, default=12)
    args = ap.parse_args(argv)
    print(json.dumps(compare(args.n, args.replicates, args.cells), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
