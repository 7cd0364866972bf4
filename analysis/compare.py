"""Comparing two runs (drift): per-cell changes with intervals, winners per group in each run, what to re-tune.

Per cell present in both runs (same cell id, status ok) and per metric (acceptance, throughput, p99s):
the change B − A and its 95 % interval from the cells' bootstrap replicates (replicate i of B minus
replicate i of A; the two bootstraps are independent, as in :mod:`analysis.winners`); the change is
*significant* when the interval excludes zero. Cells without replicates (imports without per-request
samples) get no interval and are never called significant.

Winners are decided in each run separately with the winner rule (:func:`analysis.winners.winners`
restricted to that run). The rule for a **changed winner** of a group (GPU × family × workload × load):
the winners differ, A's winner is not in B's tied set and B's winner is not in A's tied set — i.e. in
neither run are the two a tie. A differing winner that fails this is reported as ``unsettled``, not
flagged. A differing winner that one run never measured (B has no cell for A's winner, or A none for
B's) is ``not_comparable``, not flagged: a run with fewer methods must not raise a drift alert for what
it simply did not run. Every changed group is a shard to re-tune: move from A's winner to B's, with the gain B's winner
has over A's winner *in run B* (what staying put now costs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import polars as pl

from analysis import frames, gains, labels, winners
from analysis.metrics import get_metric
from ingest.errors import UsageError

COMPARED: tuple[str, ...] = (
    "acceptance_rate", "acceptance_length", "output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms",
)
GROUP = winners.GROUP
RULE = ("changed = the winners differ, each was measured in both runs, and neither run ties them (B's winner is "
        "not in A's tied set and A's winner is not in B's tied set); a differing winner that is a tie in either run "
        "is 'unsettled', one that a run did not measure is 'not_comparable'; neither is flagged")
MIN_REPLICATES = 10


@dataclass(frozen=True, slots=True)
class CompareOptions:
    metric: str = "output_throughput"  # the metric winners are decided on
    best_depth_per_method: bool = False
    level: float = gains.LEVEL


def _run_table(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return frames.runs(con).filter(pl.col("cells") - pl.col("cells_failed") > 0)


def resolve_run(con: duckdb.DuckDBPyConnection, ref: str, *, before: str | None = None) -> str:
    """A run id, or ``latest`` (newest run with results) / ``previous`` (the newest one before ``before``,
    preferring the same matrix and backend)."""
    runs = _run_table(con)
    if ref == "latest":
        if runs.height == 0:
            raise UsageError("no runs with results in the store")
        return str(runs["run_id"][0])
    if ref == "previous":
        if before is None:
            raise UsageError("'previous' needs the other run to be named")
        rows = runs.filter(pl.col("run_id") == before)
        if rows.height == 0:
            raise UsageError(f"no such run (with results): {before}")
        this = rows.row(0, named=True)
        older = runs.filter((pl.col("started_at") < this["started_at"]) & (pl.col("run_id") != before))
        same = older.filter((pl.col("matrix_hash") == this["matrix_hash"]) & (pl.col("backend") == this["backend"]))
        pick = same if same.height and this["matrix_hash"] else older
        if pick.height == 0:
            raise UsageError(f"no run before {before} to compare with")
        return str(pick["run_id"][0])
    if runs.filter(pl.col("run_id") == ref).height == 0:
        raise UsageError(f"no such run (with results): {ref}")
    return ref


def _diff_interval(diff: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise percentile interval of bootstrap differences (NaN where < MIN_REPLICATES are finite)."""
    if diff.size == 0:
        return np.zeros(diff.shape[0]), np.zeros(diff.shape[0])
    enough = np.isfinite(diff).sum(axis=1) >= MIN_REPLICATES
    lo = np.full(diff.shape[0], np.nan)
    hi = np.full(diff.shape[0], np.nan)
    if enough.any():
        q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
        lo[enough], hi[enough] = np.nanpercentile(diff[enough], q, axis=1)
    return lo, hi


def _num(x: Any) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def cell_changes(con: duckdb.DuckDBPyConnection, a: pl.DataFrame, b: pl.DataFrame, level: float) -> list[dict]:
    """Per common cell: each compared metric's A, B, change, change % and interval of the change."""
    joined = a.join(b, on="cell_id", suffix="_b", how="inner").sort([*GROUP, "method", "depth"])
    if joined.height == 0:
        return []
    keys_a = joined.select("run_id", "cell_id")
    keys_b = joined.select(pl.col("run_id_b").alias("run_id"), "cell_id")
    per_metric = {}
    for m in COMPARED:
        va = joined[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        vb = joined[f"{m}_b"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        ra, rb = frames.replicates(con, keys_a, m), frames.replicates(con, keys_b, m)
        width = min(ra.shape[1], rb.shape[1]) if ra.size and rb.size else 0
        lo, hi = _diff_interval(rb[:, :width] - ra[:, :width], level) if width else (
            np.full(len(va), np.nan), np.full(len(va), np.nan))
        per_metric[m] = (va, vb, lo, hi)
    out = []
    for i, row in enumerate(joined.select("cell_id", "method", "depth", "family", "model", "workload", "dataset",
                                          "gpu", "concurrency").iter_rows(named=True)):
        metrics = {}
        for m, (va, vb, lo, hi) in per_metric.items():
            d = vb[i] - va[i]
            sig = None if not np.isfinite(lo[i]) else bool(lo[i] > 0 or hi[i] < 0)
            metrics[m] = {"a": _num(va[i]), "b": _num(vb[i]), "delta": _num(d),
                          "delta_pct": _num(d / abs(va[i]) * 100) if np.isfinite(d) and va[i] else None,
                          "ci_low": _num(lo[i]), "ci_high": _num(hi[i]), "significant": sig}
        out.append({**row, "metrics": metrics})
    return out


def _pair(c: dict) -> tuple[str, int]:
    return (c["method"], int(c["depth"]))


def _side(g: dict) -> dict:
    tied = [_pair(t) for t in g["tied"]] if not g["clear"] else [_pair(g["winner"])]
    return {**g["winner"], "clear": g["clear"], "tied": [{"method": m, "depth": d} for m, d in tied]}


def _measured(cells: pl.DataFrame, key: tuple, pair: tuple[str, int]) -> pl.DataFrame:
    return cells.filter(*(pl.col(k).eq_missing(v) for k, v in zip(GROUP, key, strict=True)),  # null: not stated
                        pl.col("method") == pair[0], pl.col("depth") == pair[1])


def group_changes(res_a: dict, res_b: dict, cells_a: pl.DataFrame, cells_b: pl.DataFrame,
                  metric: str) -> list[dict]:
    """Per group decided in both runs: each run's winner and whether the change is flagged."""
    m = get_metric(metric)
    by_a = {tuple(g[k] for k in GROUP): g for g in res_a["cells"]}
    out = []
    for gb in res_b["cells"]:
        key = tuple(gb[k] for k in GROUP)
        ga = by_a.get(key)
        if ga is None:
            continue
        wa, wb = _pair(ga["winner"]), _pair(gb["winner"])
        tied_a = {_pair(t) for t in ga["tied"]} | {wa}
        tied_b = {_pair(t) for t in gb["tied"]} | {wb}
        status, gain = "same", None
        if wa != wb:
            old = _measured(cells_b, key, wa)  # A's winner as run B measured it
            if old.height == 0 or _measured(cells_a, key, wb).height == 0:
                status = "not_comparable"
            else:
                status = "changed" if (wb not in tied_a and wa not in tied_b) else "unsettled"
            old_value = old[m.name][0] if old.height and m.name in old.columns else None
            new_value = gb["winner"]["value"]
            if old_value and new_value:
                gain = (new_value / old_value if m.higher_is_better else old_value / new_value) * 100 - 100
        out.append({**dict(zip(GROUP, key, strict=True)), "a": _side(ga), "b": _side(gb), "status": status,
                    "gain_pct": _num(gain)})
    return out


def speculative_config(method: str, depth: int) -> dict | None:
    """The vLLM ``--speculative-config`` for a (method, depth); None means serve without speculation."""
    return None if method == "none" else {"method": method, "num_speculative_tokens": int(depth)}


def retune(groups: list[dict]) -> list[dict]:
    out = []
    for g in groups:
        if g["status"] != "changed":
            continue
        to = {"method": g["b"]["method"], "depth": g["b"]["depth"]}
        out.append({"shard": "/".join(str(x) for x in (g["gpu"], labels.model_short(g["model"]), g["workload"],
                                                         g.get("dataset"), labels.load(g["concurrency"])) if x),
                    **{k: g[k] for k in GROUP}, "from": {"method": g["a"]["method"], "depth": g["a"]["depth"]},
                    "to": to, "gain_pct": g["gain_pct"], "speculative_config": speculative_config(**to)})
    return sorted(out, key=lambda r: -(r["gain_pct"] or 0.0))


def _run_info(runs: pl.DataFrame, run_id: str, n_cells: int) -> dict:
    row = runs.filter(pl.col("run_id") == run_id).row(0, named=True)
    return {"run_id": run_id, "backend": row["backend"], "started_at": str(row["started_at"]), "source": row["source"],
            "matrix_hash": row["matrix_hash"], "cells": n_cells}


def compare_runs(con: duckdb.DuckDBPyConnection, run_a: str, run_b: str, opts: CompareOptions | None = None) -> dict:
    """The drift report of run B against run A (see the module docstring for every rule)."""
    opts = opts or CompareOptions()
    metric = get_metric(opts.metric)
    if run_a == run_b:
        raise UsageError("compare needs two different runs")
    cells_a = frames.cells(con, frames.Filters(runs=(run_a,)))
    cells_b = frames.cells(con, frames.Filters(runs=(run_b,)))
    # model draws are shared by both runs' simulated cells (draw j is one parameter set everywhere): they cancel
    # between runs, so drift is judged on sampling noise (measured cells have no draws anyway)
    res = [winners.winners(con, metric.name, frames.Filters(runs=(r,)),
                           best_depth_per_method=opts.best_depth_per_method, model_error=False)
           for r in (run_a, run_b)]
    groups = group_changes(res[0], res[1], cells_a, cells_b, metric.name)
    changes = cell_changes(con, cells_a, cells_b, opts.level)
    ids_a, ids_b = set(cells_a["cell_id"].to_list()), set(cells_b["cell_id"].to_list())
    runs = frames.runs(con)
    backends = sorted(set(res[0]["backends"]) | set(res[1]["backends"]))
    return {
        "run_a": _run_info(runs, run_a, len(ids_a)), "run_b": _run_info(runs, run_b, len(ids_b)),
        "metric": metric.name, "higher_is_better": metric.higher_is_better, "level": opts.level, "rule": RULE,
        "cells_compared": len(changes), "only_in_a": len(ids_a - ids_b), "only_in_b": len(ids_b - ids_a),
        "cells_changed": {m: sum(1 for c in changes if c["metrics"][m]["significant"]) for m in COMPARED},
        "groups_compared": len(groups), "winners_changed": sum(g["status"] == "changed" for g in groups),
        "winners_unsettled": sum(g["status"] == "unsettled" for g in groups),
        "winners_not_comparable": sum(g["status"] == "not_comparable" for g in groups),
        "groups": groups, "retune": retune(groups), "cells": changes,
        "backends": backends, "simulated": "sim" in backends,
    }
