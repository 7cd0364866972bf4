"""Curves by depth: acceptance and throughput of one method as depth grows (measured points, plus the
acceptance model's fill-in for depths the store lacks).

Each point says which backend its row came from (``backend``); the curve is ``simulated`` when any point is,
as every command's output is. ``output_throughput`` is the steady-state figure the winner rule uses
(docs/metrics.md), with the whole-window one next to it."""

from __future__ import annotations

import duckdb
import numpy as np

from analysis import frames, labels, model_provenance


def curve(con: duckdb.DuckDBPyConnection, family: str, method: str, workload: str, gpu: str | None = None,
          concurrency: int | None = None, model: str | None = None) -> dict:
    """One point per (model, dataset, GPU, load, depth): a curve never mixes two models of the family."""
    f = frames.Filters(families=(family,), methods=(method,), workloads=(workload,),
                       gpus=(gpu,) if gpu else (), concurrency=(concurrency,) if concurrency else (),
                       models=(model,) if model else (), modes=("fixed",))  # a depth axis: fixed depths
    cells = frames.cells(con, f)
    points = []
    for (depth, conc, g, _m, _d), grp in cells.group_by(["depth", "concurrency", "gpu", "model", "dataset"],
                                                        maintain_order=True):
        row = grp.row(0, named=True)
        points.append({
            "model": row["model"], "dataset": row["dataset"],
            "depth": int(depth), "concurrency": None if conc is None else int(conc), "gpu": g,
            "load": labels.load_json(conc),
            "acceptance_length": _n(row["acceptance_length"]), "acceptance_rate": _n(row["acceptance_rate"]),
            "output_throughput": _n(row["steady_output_throughput"]),
            "whole_window_output_throughput": _n(row["output_throughput"]),
            "steady_fallback": row["steady_fallback"], "p99_e2e_ms": _n(row["p99_e2e_ms"]),
            "backend": row["backend"], "simulated": row["backend"] == "sim",
            "provenance": model_provenance.for_row(row),
        })
    points.sort(key=lambda p: (p["model"], p["dataset"] or "", p["gpu"], p["concurrency"] is None,
                               p["concurrency"] or 0, p["depth"]))
    backends = sorted({p["backend"] for p in points})
    return {"family": family, "method": method, "workload": workload, "gpu": gpu, "points": points,
            "backends": backends, "simulated": "sim" in backends}


def _n(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)
