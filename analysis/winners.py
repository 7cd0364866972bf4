"""Winners with confidence (DESIGN's winner rule).

For a group (GPU × model × workload [× dataset] × load) and one metric, the candidates are its (method, depth)
cells. The winner is the best point estimate. Against every other candidate, the 95 % percentile interval
of the bootstrap difference (winner − candidate, replicates paired by index: the cells' bootstraps are
independent) either excludes zero — the candidate is clearly beaten — or it does not, and the candidate is
tied with the winner. The winner is **clear** only when nobody is tied with it; otherwise the group is a
tie and names the tied set. Candidates without replicates cannot be beaten clearly (no claim from noise).

Simulated cells carry model-draw factors (analysis/model_draws.py, already folded into their replicates). On
top of the interval, a candidate that beats the winner under *any* model draw (point value × the draw's
factor, same draw for both: paired) is tied with it: a winner that flips within the model's uncertainty is a
tie, so "clear" on simulated data means robust to the model's error, not only to its dice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from analysis import equivalence, frames, labels, model_provenance
from analysis.metrics import Metric, get_metric

# A group never holds two models' candidates (family is a filter, not a group); the dataset splits a workload where
# the source names one; a null concurrency ("load not stated") is its own group, never pooled with a stated load.
GROUP = ("gpu", "family", "model", "workload", "dataset", "concurrency")
LEVEL = 0.95


@dataclass(slots=True)
class Decision:
    order: list[int]  # candidate indices, best first
    tied: list[int]  # indices tied with the winner (winner first)
    clear: bool
    intervals: list[tuple[float, float]]  # each candidate's own 95 % interval


def intervals(reps: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Each row's percentile interval over its finite values (NaN with fewer than 10), vectorised.

    Same numbers as ``np.percentile(row[finite], ...)`` per row (linear method, numpy's lerp), in one sort.
    """
    reps = np.atleast_2d(np.asarray(reps, dtype=float))
    m = reps.shape[0]
    if reps.size == 0:
        return np.full(m, np.nan), np.full(m, np.nan)
    s = np.sort(reps, axis=1)  # NaNs sort last
    count = np.isfinite(reps).sum(axis=1)
    qs = np.true_divide(np.array([(1 - level) / 2 * 100, (1 + level) / 2 * 100]), 100)
    rows = np.arange(m)
    out = []
    for q in qs:
        virtual = (np.maximum(count, 1) - 1) * q
        prev = np.floor(virtual).astype(int)
        nxt = np.minimum(prev + 1, np.maximum(count - 1, 0))
        gamma = virtual - prev
        a, b = s[rows, prev], s[rows, nxt]
        diff = b - a
        val = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
        out.append(np.where(count >= 10, val, np.nan))
    return out[0], out[1]


def interval(reps: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    lo, hi = intervals(np.asarray(reps, dtype=float).reshape(1, -1), level)
    return float(lo[0]), float(hi[0])


def decide(values: np.ndarray, reps: np.ndarray, metric: Metric, level: float = LEVEL,
           ivals: list[tuple[float, float]] | None = None, model: np.ndarray | None = None) -> Decision:
    """Apply the winner rule to candidates with point ``values`` and bootstrap ``reps`` (n × B).

    ``ivals``: the candidates' own intervals when the caller already computed them (all cells at once).
    ``model``: per-candidate model-draw factors (n × R, 1.0 for measured cells): a candidate ahead of the
    winner under any draw is tied with it."""
    sign = 1.0 if metric.higher_is_better else -1.0
    score = np.where(np.isfinite(values), sign * values, -np.inf)
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    w = order[0]
    others = [c for c in order[1:] if np.isfinite(values[c])]
    tied = [w]
    if reps.size == 0:
        tied += others
    elif others:
        lo, _hi = intervals(sign * (reps[w][None, :] - reps[others]), level)
        tied += [c for c, low in zip(others, lo, strict=True) if not np.isfinite(low) or low <= 0.0]
    if model is not None and model.size and others:
        with np.errstate(invalid="ignore"):
            flips = (sign * (values[w] * model[w][None, :] - values[others][:, None] * model[others]) < 0).any(axis=1)
        tied += [c for c, f in zip(others, flips, strict=True) if f and c not in tied]
        tied = [w, *sorted(set(tied[1:]), key=order.index)]
    if ivals is None:
        ivals = _interval_list(reps, len(values), level)
    return Decision(order=order, tied=tied, clear=len(tied) == 1, intervals=ivals)


def _interval_list(reps: np.ndarray, n: int, level: float = LEVEL) -> list[tuple[float, float]]:
    if not reps.size:
        return [(float("nan"), float("nan"))] * n
    lo, hi = intervals(reps, level)
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def _cand(row: dict, value: float, ival: tuple[float, float], m: Metric | None = None) -> dict:
    out = {"method": row["method"], "depth": int(row["depth"]), "value": _num(value),
           "ci_low": _num(ival[0]), "ci_high": _num(ival[1]), **acceptance_labels(row)}
    if row.get("schedule"):
        out["schedule"] = json.loads(row["schedule"])
    if m is not None and m.whole_window_column:  # decided on the steady window; the whole-window figure beside it
        whole = row.get(m.whole_window_column)
        out["whole_window_value"] = _num(whole) if whole is not None else None
        out["steady_fallback"] = row.get("steady_fallback")
    return out


def acceptance_labels(row: dict) -> dict:
    """Where a candidate's acceptance came from (per-request | counters | null) and, when the per-request sums
    disagreed with the /metrics counters, why (``acceptance_suspect``; null otherwise)."""
    return {"acceptance_source": row.get("acceptance_source"), "acceptance_suspect": row.get("acceptance_suspect")}


def grid_edge(rows: list[dict], values: np.ndarray, winner: int) -> dict | None:
    """Is the winner's depth the deepest, or the shallowest, its method has in the group (``edge``)? Then a
    depth beyond the grid might do better: the winner is flagged "at the edge of the grid". Depth 1 is not
    flagged as shallowest (nothing shallower exists but no speculation, which is a candidate of its own), nor
    is the baseline."""
    row = rows[winner]
    if row["method"] == "none":
        return None
    depths = sorted({int(r["depth"]) for r, v in zip(rows, values, strict=True)
                     if r["method"] == row["method"] and np.isfinite(v)})
    depth = int(row["depth"])
    edge = "deepest" if depth == depths[-1] else "shallowest" if depth == depths[0] and depth > 1 else None
    if edge is None:
        return None
    return {"edge": edge, "depths": [depths[0], depths[-1]],
            "text": f"at the edge of the grid ({edge} depth measured for {row['method']}: "
                    f"{depths[0]}–{depths[-1]})" if len(depths) > 1 else
                    f"at the edge of the grid (the only depth measured for {row['method']})"}


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def goodput_frame(con: duckdb.DuckDBPyConnection, cells: pl.DataFrame, ttft_ms: float, tpot_ms: float,
                  replicates: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Goodput point values and parametric-bootstrap replicates (binomial on the share meeting the SLO)."""
    g = frames.goodput(con, cells, ttft_ms, tpot_ms)
    joined = cells.select("run_id", "cell_id").join(g, on=["run_id", "cell_id"], how="left")
    meeting = joined["meeting"].fill_null(0).to_numpy().astype(float)
    n = joined["n"].fill_null(0).to_numpy().astype(float)
    window = joined["window_s"].fill_null(np.nan).to_numpy().astype(float)
    values = np.where(window > 0, meeting / window, np.nan)
    reps = np.full((len(values), replicates), np.nan)
    for i, cid in enumerate(joined["cell_id"].to_list()):
        if n[i] > 0 and window[i] > 0:
            rng = np.random.default_rng(int(cid[:12], 16))
            reps[i] = rng.binomial(int(n[i]), meeting[i] / n[i], replicates) / n[i] * (n[i] / window[i])
    return values, reps


def winners(
    con: duckdb.DuckDBPyConnection, metric: str = "output_throughput", f: frames.Filters | None = None,
    *, slo_ttft_ms: float = 2000.0, slo_tpot_ms: float = 50.0, best_depth_per_method: bool = False,
    draft_models: dict[str, str] | None = None,
    model_error: bool = True,
    margin_pct: float = equivalence.DEFAULT_MARGIN_PCT,
    default: tuple[str, int] | None = equivalence.DEFAULT_CANDIDATE,
) -> dict:
    """The winner of every group under the filters, as the CLI's JSON document (DESIGN contract).

    ``model_error=False`` takes the model draws out of simulated cells' replicates (sampling noise only): for
    comparing two simulated runs, whose cells share every draw, so the model's error cancels between them.
    ``margin_pct``: practical equivalence (analysis.equivalence); ``default``: the deployed (method, depth), a
    tie-break of the sensible pick and the reference of each cell's ``default`` entry."""
    m = get_metric(metric)
    cells = frames.cells(con, f or frames.Filters())
    # A synthetic-acceptance cell measured step cost at a given acceptance, not the method: it never wins.
    cells = cells.filter(pl.col("synthetic_rates").is_null())
    if m.name == "goodput":
        values, reps = goodput_frame(con, cells, slo_ttft_ms, slo_tpot_ms)
    else:
        values = cells[m.value_column].fill_null(np.nan).to_numpy().astype(float)
        reps = frames.replicates(con, cells, m.value_column)
    model = frames.model_factors(con, cells, m.name) if m.name != "goodput" else None
    if not model_error and model is not None and model.size and reps.size:
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = reps / model[:, : reps.shape[1]]
        model = None
    return decide_groups(cells, values, reps, m, best_depth_per_method=best_depth_per_method, model=model,
                         draft_models=draft_models, margin_pct=margin_pct, default=default)


def deploy_for(row: dict, draft_models: dict[str, str] | None = None) -> dict:
    """The full ``vllm serve`` command of a winning cell (analysis.deploy): its model, the TP size it was
    benchmarked with, its drafter."""
    from analysis.deploy import serve_command
    from analysis.rescore.config import Choice

    choice = Choice(row["method"], 0 if row["method"] == "none" else int(row["depth"]))
    return serve_command(row["model"], row.get("gpu_count"), choice, draft_model=row.get("draft_model"),
                         draft_models=draft_models).as_dict()


def decide_groups(cells: pl.DataFrame, values: np.ndarray, reps: np.ndarray, m: Metric, *,
                  best_depth_per_method: bool = False, model: np.ndarray | None = None,
                  draft_models: dict[str, str] | None = None,
                  margin_pct: float = equivalence.DEFAULT_MARGIN_PCT,
                  default: tuple[str, int] | None = equivalence.DEFAULT_CANDIDATE) -> dict:
    if not (np.isfinite(margin_pct) and 0 <= margin_pct <= 100):
        raise ValueError(f"equivalence margin {margin_pct} %: expected 0–100")
    out_cells = []
    # frames without a model or dataset column (older exports, hand-built frames): null, one group as before
    cells = cells.with_columns(pl.lit(None, pl.String).alias(k) for k in GROUP if k not in cells.columns)
    all_rows = cells.to_dicts()  # once, not per group: the rerun of a dashboard page waits on this
    all_ivals = _interval_list(reps, cells.height)
    groups = cells.with_row_index("_i").group_by(list(GROUP), maintain_order=True).agg(pl.col("_i"))
    for idx_list in groups["_i"].to_list():
        idx = np.asarray(idx_list, dtype=np.int64)
        rows = [all_rows[i] for i in idx_list]
        ivals = [all_ivals[i] for i in idx_list]
        v, r = values[idx], (reps[idx] if reps.size else reps)
        group_rows, group_values = rows, v  # every depth measured, for the edge-of-grid flag
        md = model[idx] if model is not None and model.size else None
        if best_depth_per_method:  # keep each method's best depth only
            keep = {}
            for j, row in enumerate(rows):
                best = keep.get(row["method"])
                if np.isfinite(v[j]) and (best is None or m.better(v[j], v[best])):
                    keep[row["method"]] = j
            sel = np.array(sorted(keep.values()), dtype=int)
            rows, v, r = [rows[j] for j in sel], v[sel], (r[sel] if r.size else r)
            md = md[sel] if md is not None else None
            ivals = [ivals[j] for j in sel]
        if not len(rows) or not np.isfinite(v).any():
            continue
        d = decide(v, r, m, ivals=ivals, model=md)
        w = d.order[0]
        ru = d.order[1] if len(d.order) > 1 and np.isfinite(v[d.order[1]]) else None
        base = next((j for j, row in enumerate(rows) if row["method"] == "none"), None)
        margin = None
        if ru is not None and v[ru]:
            margin = (v[w] - v[ru]) / abs(v[ru]) * 100 * (1 if m.higher_is_better else -1)
        gain = None
        if base is not None and v[base] and np.isfinite(v[base]):
            gain = ((v[w] / v[base]) if m.higher_is_better else (v[base] / v[w])) * 100 - 100
        gain_ci = None  # paired bootstrap: the same replicates of winner and baseline
        if gain is not None and r.size:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = r[w] / r[base] if m.higher_is_better else r[base] / r[w]
            gain_ci = [_num(x * 100 - 100) for x in interval(ratio * 1.0)]
        edge = grid_edge(group_rows, group_values, next(
            j for j, row in enumerate(group_rows) if row["cell_id"] == rows[w]["cell_id"]))
        out_cells.append({
            **{k: rows[w][k] for k in GROUP},
            "load": labels.load_json(rows[w]["concurrency"]),
            "source_url": rows[w].get("source_url"),  # the public source of an imported/published figure
            "winner": _cand(rows[w], v[w], d.intervals[w], m),
            "runner_up": _cand(rows[ru], v[ru], d.intervals[ru], m) if ru is not None else None,
            "margin_pct": _num(margin) if margin is not None else None,
            "clear": d.clear,
            "tied": [{"method": rows[j]["method"], "depth": int(rows[j]["depth"]), "value": _num(v[j])}
                     for j in d.tied] if not d.clear else [],
            **equivalence.cell_fields(rows, v, d.order, d.tied if not d.clear else [w], m, margin_pct, default, ru),
            "top3": [_cand(rows[j], v[j], d.intervals[j], m) for j in d.order[:3] if np.isfinite(v[j])],
            "at_grid_edge": edge is not None,
            "grid_edge": edge,
            "gain_vs_none_pct": _num(gain) if gain is not None else None,
            "gain_vs_none_ci_pct": gain_ci,
            "baseline_value": _num(v[base]) if base is not None else None,
            "backend": rows[w]["backend"],
            "provenance": model_provenance.for_row(rows[w]),
            "run_id": rows[w]["run_id"],
            "cell_id": rows[w]["cell_id"],
            # measured | predicted (a factorized plan's model value, no requests behind it) | confirmed
            "origin": rows[w].get("origin") or "measured",
            "predicted": [{"method": rows[j]["method"], "depth": int(rows[j]["depth"])} for j in d.order[:3]
                          if rows[j].get("origin") == "predicted"],
            "deploy": deploy_for(rows[w], draft_models) if "model" in rows[w] else None,
        })
        pick = out_cells[-1]["pick"]
        pick_row = next(r for r in rows if r["method"] == pick["method"] and int(r["depth"]) == pick["depth"])
        pick["deploy"] = deploy_for(pick_row, draft_models) if "model" in pick_row else None
    backends = sorted({row["backend"] for row in all_rows})
    return {"metric": m.name, "higher_is_better": m.higher_is_better, "cells": out_cells, "backends": backends,
            "simulated": "sim" in backends, "value_column": m.value_column,
            "equivalence_margin_pct": margin_pct, "pick_rule": equivalence.RULE,
            "whole_window_column": m.whole_window_column}
