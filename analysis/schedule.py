"""A depth schedule per batch size: vLLM's ``num_speculative_tokens_per_batch_size`` derived from the cells.

For one GPU × family × workload × method, the cells at every measured load (concurrency = the batch the
server runs) and depth give, per load, the depth that is best on the chosen metric. The schedule maps
batch sizes to those depths: each measured load owns the batch sizes nearer to it than to its neighbours
in log scale (the boundary between loads c and c' is ⌊√(c·c')⌋); the first range starts at 1, as vLLM
requires, and vLLM carries the last range's depth on to larger batches. Neighbouring ranges with the same
depth merge. ``num_speculative_tokens`` is the schedule's largest depth (vLLM caps every range by it).

The comparison is the best *static* depth: the one whose worst-to-best ratio, averaged over the loads
(equal weight per load), is highest. The gain = the mean over loads of schedule / static − 1 (in the
metric's good direction); its 95 % interval comes from the cells' bootstrap replicates paired by index,
as in the winner rule. The schedule is **recommended** only when it uses more than one depth, that
interval excludes zero and the gain reaches the practical-equivalence margin (2 %, DESIGN); otherwise
the static depth is the answer (a tie is not a reason to add moving parts). Depths are chosen on the
point estimates, so the interval shows noise, not the selection's
optimism; re-scoring weighs the same choice by a trace's own load distribution (analysis.rescore).

A schedule that was measured (a matrix's ``schedule`` arm, ``cells.mode = 'schedule'``) is checked against that
prediction (:func:`checks`, ``checks`` in the document): per load, the measured cell against the fixed cell at the
depth the schedule runs there.
"""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import polars as pl

from analysis import frames
from analysis.costmodel import depth_at  # also what rescore reads from here
from analysis.deploy import serve_command
from analysis.gains import LEVEL, interval
from analysis.metrics import Metric, get_metric
from analysis.rescore.config import Choice, Schedule, scheduled

GROUP = ("gpu", "family", "model", "workload", "dataset", "method")  # per model; loads vary inside a group
SCHEDULE_MARGIN_PCT = 2.0  # DESIGN's practical-equivalence margin: a smaller gain is not worth a schedule


def ranges(loads: list[int], depths: list[int]) -> Schedule:
    """Inclusive batch-size ranges for per-load depths (loads ascending), merged where depths repeat."""
    out: list[list[int]] = []
    start = 1
    for i, (c, k) in enumerate(zip(loads, depths, strict=True)):
        end = math.isqrt(c * loads[i + 1]) if i + 1 < len(loads) else max(c, start)
        end = max(end, start)
        if out and out[-1][2] == k:
            out[-1][1] = end
        else:
            out.append([start, end, k])
        start = end + 1
    return tuple((a, b, k) for a, b, k in out)


def _ratio(m: Metric, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return a / b if m.higher_is_better else b / a


def derive(cells: pl.DataFrame, values: np.ndarray, reps: np.ndarray, m: Metric, *, level: float = LEVEL,
           draft_models: dict[str, str] | None = None) -> list[dict]:
    """One schedule document per GPU × family × workload × method with ≥ 2 loads and ≥ 2 depths."""
    out = []
    # a schedule runs along stated loads: a figure whose load is not stated has no place on that axis
    spec = cells.with_row_index("_i").filter((pl.col("method") != "none") & pl.col("concurrency").is_not_null())
    if "mode" in spec.columns:  # derived from fixed depths: a measured schedule's depth is only its cap
        spec = spec.filter(pl.col("mode") == "fixed")
    spec = spec.with_columns(pl.lit(None, pl.String).alias(k) for k in GROUP if k not in spec.columns)
    for _key, g in spec.group_by(list(GROUP), maintain_order=True):
        loads = sorted(set(g["concurrency"].to_list()))
        depths = sorted(d for d in set(g["depth"].to_list())
                        if g.filter(pl.col("depth") == d).height == len(loads))  # measured at every load
        if len(loads) < 2 or len(depths) < 2:
            continue
        idx = {(int(r["depth"]), int(r["concurrency"])): int(r["_i"]) for r in g.iter_rows(named=True)}
        v = np.array([[values[idx[(d, c)]] for c in loads] for d in depths], dtype=float)  # depth × load
        if not np.isfinite(v).all():
            continue
        sign = 1.0 if m.higher_is_better else -1.0
        best = np.argmax(sign * v, axis=0)  # per load
        norm = _ratio(m, v, v[best, np.arange(len(loads))][None, :])  # ≤ 1: share of the best at each load
        static = int(np.argmax(norm.mean(axis=1)))
        sched = ranges(loads, [depths[i] for i in best])
        cols = np.arange(len(loads))
        gain = float(_ratio(m, v[best, cols], v[static]).mean() * 100 - 100)
        ci: list[float | None] = [None, None]
        if reps.size:
            r = np.stack([[reps[idx[(d, c)]] for c in loads] for d in depths])  # depth × load × B
            per_rep = _ratio(m, r[best, cols], r[static]).mean(axis=0) * 100 - 100
            lo, hi = interval(per_rep, level)
            ci = [_num(lo), _num(hi)]
        multi = len({k for _a, _b, k in sched}) > 1
        recommended = multi and ci[0] is not None and ci[0] > 0 and gain >= SCHEDULE_MARGIN_PCT
        row0 = g.row(0, named=True)
        choice = scheduled(row0["method"], sched) if recommended else Choice(row0["method"], depths[static])
        drafter = next((d for d in g["draft_model"].to_list() if d), None) if "draft_model" in g.columns else None
        cmd = serve_command(row0["model"], _tp(g), choice, draft_model=drafter, draft_models=draft_models)
        out.append({
            **{k: row0[k] for k in GROUP},
            "loads": [{"concurrency": c, "best_depth": depths[best[j]], "value": _num(v[best[j], j]),
                       "static_value": _num(v[static, j])} for j, c in enumerate(loads)],
            "static": {"depth": depths[static]},
            "schedule": [list(r) for r in sched],
            "gain_vs_static_pct": _num(gain), "gain_ci_pct": ci, "recommended": recommended,
            "deploy": cmd.as_dict(),
            "backend": row0["backend"],
            "origins": sorted(set(g["origin"].to_list())) if "origin" in g.columns else ["measured"],
        })
    return out


def checks(cells: pl.DataFrame, values: np.ndarray, m: Metric) -> list[dict]:
    """Predicted against measured, for every measured schedule cell: the prediction is the fixed cell of the same
    group and load at the depth the schedule runs at that load (:func:`depth_at`: the closed loop keeps
    ``concurrency`` requests in flight), which is how a schedule is predicted from fixed cells (:func:`derive`).
    ``error_pct`` = measured / predicted − 1 in the metric's good direction (positive: the schedule did better
    than predicted); None when no fixed cell of that depth and load was measured."""
    rows = cells.with_row_index("_i").filter(pl.col("concurrency").is_not_null())
    if "mode" not in rows.columns or rows.height == 0:
        return []
    fixed = {tuple(r[k] for k in (*GROUP, "concurrency", "depth")): int(r["_i"])
             for r in rows.filter(pl.col("mode") == "fixed").iter_rows(named=True)}
    out = []
    for r in rows.filter(pl.col("mode") == "schedule").iter_rows(named=True):
        sched = json.loads(r["schedule"])
        depth = depth_at(sched, int(r["concurrency"]))
        j = fixed.get((*(r[k] for k in GROUP), r["concurrency"], depth))
        measured, predicted = float(values[int(r["_i"])]), (float(values[j]) if j is not None else float("nan"))
        err = float(_ratio(m, np.array(measured), np.array(predicted)) * 100 - 100) if j is not None else None
        out.append({**{k: r[k] for k in GROUP}, "concurrency": int(r["concurrency"]), "schedule": sched,
                    "depth_at_load": depth, "measured": _num(measured), "predicted": _num(predicted),
                    "predicted_from": f"{r['method']}·{depth} at c={int(r['concurrency'])}" if j is not None else None,
                    "error_pct": _num(err), "cell_id": r["cell_id"]})
    return out


def _tp(g: pl.DataFrame) -> int:
    tps = [int(t) for t in g["gpu_count"].to_list() if t]
    return max(tps) if tps else 1


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 4)


def schedules(con: duckdb.DuckDBPyConnection, metric: str = "output_throughput", f: frames.Filters | None = None,
              *, draft_models: dict[str, str] | None = None) -> dict:
    """The ``analysis winners --schedule`` document: a schedule (or the static depth) per group."""
    m = get_metric(metric)
    if not m.bootstrapped:
        raise ValueError(f"--schedule needs a metric with stored replicates, not {metric!r}")
    cells = frames.cells(con, f or frames.Filters())
    values = cells[m.name].fill_null(np.nan).to_numpy().astype(float)
    reps = frames.replicates(con, cells, m.name)
    backends = sorted(set(cells["backend"].to_list()))
    return {"metric": m.name, "higher_is_better": m.higher_is_better,
            "schedules": derive(cells, values, reps, m, draft_models=draft_models),
            "checks": checks(cells, values, m),
            "backends": backends, "simulated": "sim" in backends}


def schedule_table(doc: dict) -> pl.DataFrame:
    """The schedules of a :func:`schedules` document as one table row each (dashboard, exports)."""
    return pl.DataFrame([{
        "method": s["method"], "schedule": ", ".join(f"{a}–{b}: {k}" for a, b, k in s["schedule"]),
        "static_depth": s["static"]["depth"], "gain_vs_static_pct": s["gain_vs_static_pct"],
        "gain_ci_low": s["gain_ci_pct"][0], "gain_ci_high": s["gain_ci_pct"][1],
        "recommended": s["recommended"], "command": s["deploy"]["command"]} for s in doc["schedules"]],
        schema={"method": pl.String, "schedule": pl.String, "static_depth": pl.Int64,
                "gain_vs_static_pct": pl.Float64, "gain_ci_low": pl.Float64, "gain_ci_high": pl.Float64,
                "recommended": pl.Boolean, "command": pl.String})


def measured_gain(arm: np.ndarray, static: np.ndarray, arm_reps: np.ndarray, static_reps: np.ndarray, m: Metric,
                  *, level: float = LEVEL) -> dict:
    """A measured schedule arm against the static depth it was predicted to beat, by the rule that recommended it
    (:func:`derive`): gain = the mean over loads of arm / static − 1 (good direction), its interval from the
    cells' replicates paired by index. ``arm``, ``static``: one value per load; ``*_reps``: loads × replicates.
    Verdict ``confirmed`` (interval above 0 and gain ≥ the margin), ``worse`` (interval below 0), else ``no
    clear gain``."""
    if arm.size == 0 or not np.isfinite(arm).all() or not np.isfinite(static).all():
        return {"gain_pct": None, "ci": [None, None], "verdict": "not measured"}
    gain = float(_ratio(m, arm, static).mean() * 100 - 100)
    ci: list[float | None] = [None, None]
    if arm_reps.size and static_reps.size:
        lo, hi = interval(_ratio(m, arm_reps, static_reps).mean(axis=0) * 100 - 100, level)
        ci = [_num(lo), _num(hi)]
    if ci[0] is not None and ci[0] > 0 and gain >= SCHEDULE_MARGIN_PCT:
        verdict = "confirmed"
    elif ci[1] is not None and ci[1] < 0:
        verdict = "worse"
    else:
        verdict = "no clear gain"
    return {"gain_pct": _num(gain), "ci": ci, "verdict": verdict}
