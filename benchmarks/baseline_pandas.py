"""The obvious baseline for winners: the same computation in plain pandas, from the raw request rows.

Owns :func:`winners_pandas` (and :func:`winners_pandas_point`). What it computes, for the default metric
(output throughput), starting from the export's Parquet files (pandas/pyarrow reader — the fastest way pandas
gets these rows): per cell, the point estimate Σ output tokens of successful requests / window, and 200
Poisson-bootstrap replicates of it (weights ``rng.poisson(1, (200, n))``, ratio estimator Σw·tokens / Σw·e2e —
the definition in docs/metrics.md); then per group (GPU × family × workload × load) the winner rule (p_best):
the best point estimate is clear when it is the best in ≥ 95 % of the replicate columns, paired by index (a tie
in a column splits it).
spectune computes the same answer from per-cell rows and replicates that were materialised once, when the
cells landed (that landing cost is the ingest figure).

:func:`winners_pandas_point` is the floor of any from-raw-rows approach: point estimates only (one groupby),
no intervals — it cannot tell a tie from a win.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

GROUP = ["gpu", "family", "model", "workload", "concurrency"]  # per model, as analysis.winners.GROUP
REPLICATES = 200


def _load(export: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    req = pd.read_parquet(export / "requests.parquet", columns=["run_id", "cell_id", "output_tokens", "e2e_ms", "ok"])
    cells = pd.read_parquet(export / "cells.parquet", columns=["run_id", "cell_id", "method", "depth", *GROUP,
                                                               "status", "window_s"])
    req = req[req["ok"].fillna(True).astype(bool)]
    return req, cells[cells["status"] == "ok"]


def _decide(group: pd.DataFrame, reps: dict[tuple[str, str], np.ndarray], clear_at: float = 0.95) -> dict:
    g = group.sort_values("point", ascending=False, kind="stable")
    best = g.iloc[0]
    r = np.vstack([reps[(row["run_id"], row["cell_id"])] for _, row in g.iterrows()])  # the winner first
    ok = np.isfinite(r)
    cols = ok.any(axis=0)
    s = np.where(ok, r, -np.inf)[:, cols]
    win = (s == s.max(axis=0)) & ok[:, cols]
    p_best = (win / win.sum(axis=0)).sum(axis=1) / max(int(cols.sum()), 1)
    clear = len(g) == 1 or (bool(ok.any(axis=1).all()) and p_best[0] >= clear_at - 1e-12)
    return {"method": best["method"], "depth": int(best["depth"]), "value": float(best["point"]),
            "clear": bool(clear)}


def winners_pandas(export: str | Path, seed: int = 0) -> dict[tuple, dict]:
    """{(gpu, family, workload, concurrency): {method, depth, value, clear}} from raw rows, with intervals."""
    req, cells = _load(Path(export))
    window = dict(zip(zip(cells["run_id"], cells["cell_id"], strict=True), cells["window_s"], strict=True))
    rng = np.random.default_rng(seed)
    points, reps = {}, {}
    for key, grp in req.groupby(["run_id", "cell_id"], sort=False):
        if key not in window:
            continue
        tok = grp["output_tokens"].to_numpy(dtype=float)
        e2e = grp["e2e_ms"].to_numpy(dtype=float)
        keep = np.isfinite(e2e)
        point = np.nansum(tok) / window[key]
        w = rng.poisson(1.0, size=(REPLICATES, int(keep.sum())))
        rate = (w @ tok[keep]) / (w @ e2e[keep])
        points[key] = point
        reps[key] = point * rate / (tok[keep].sum() / e2e[keep].sum())
    cells = cells.assign(point=[points.get(k, np.nan) for k in zip(cells["run_id"], cells["cell_id"], strict=True)])
    cells = cells[np.isfinite(cells["point"])]
    return {key: _decide(group, reps) for key, group in cells.groupby(GROUP, sort=True)}


def winners_pandas_point(export: str | Path) -> dict[tuple, dict]:
    """Point-estimate winners only: one groupby over the raw rows, no confidence intervals."""
    req, cells = _load(Path(export))
    tokens = req.groupby(["run_id", "cell_id"], sort=False)["output_tokens"].sum().rename("tokens").reset_index()
    cells = cells.merge(tokens, on=["run_id", "cell_id"])
    cells["point"] = cells["tokens"] / cells["window_s"]
    best = cells.loc[cells.groupby(GROUP)["point"].idxmax()]
    return {tuple(r[c] for c in GROUP): {"method": r["method"], "depth": int(r["depth"]), "value": float(r["point"])}
            for _, r in best.iterrows()}


def agreement(spectune_doc: dict, pandas_result: dict[tuple, dict]) -> dict[str, float | int]:
    """How often both sides name the same winner (and the same clear/tie verdict) per group."""
    same = verdict = 0
    for c in spectune_doc["cells"]:
        p = pandas_result.get(tuple(c[k] for k in GROUP))
        if p is None:
            continue
        if (p["method"], p["depth"]) == (c["winner"]["method"], c["winner"]["depth"]):
            same += 1
            verdict += int("clear" not in p or p["clear"] == c["clear"])
    n = len(spectune_doc["cells"])
    return {"groups": n, "same_winner": same, "same_verdict": verdict}
