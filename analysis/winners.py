"""Winners with confidence (DESIGN's winner rule, docs/metrics.md "Winner rule").

For a group (GPU × model × workload [× dataset] × load) and one metric, the candidates are its (method, depth)
cells (or each method's best depth). The group's replicates are columns: column j of every candidate's row is one joint
draw of the world (bootstrap replicate j; on simulated cells × model draw j, folded in by ingest, the same draw
for every cell of the group, so the columns are paired). Each candidate's **p_best** is the share of the
columns in which it is the best under the metric's direction (a tie inside a column splits that column equally;
a candidate without a value in a column cannot win it; a column without any value is ignored).

The **winner** is the best point estimate. It is **clear** when its p_best ≥ ``clear_at`` (default 0.95);
otherwise the group is a tie whose **tied** set is the candidates with p_best ≥ ``tie_at`` (default 0.05),
winner first. A tie always names at least one other candidate: when nobody else reaches ``tie_at`` (the
remaining chance is spread thin), the one with the highest p_best is named. A candidate with a point value but
no replicate at all cannot be ruled out: its p_best is unknown (None) and it is tied (no claim from noise).
Point figures (imported or published cells without per-request samples) get replicates from a stated run-to-run
noise before the rule runs (:func:`point_noise_replicates`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from analysis import equivalence, frames, labels, model_provenance
from analysis.deploy import serve_command
from analysis.gains import LEVEL, gain_text, gain_vs, intervals
from analysis.labels import candidate
from analysis.metrics import Metric, get_metric
from analysis.rescore.config import Choice
from ingest.cellstats import BOOTSTRAP_REPLICATES

# A group never holds two models' candidates (family is a filter, not a group); the dataset splits a workload where
# the source names one; a null concurrency ("load not stated") is its own group, never pooled with a stated load.
GROUP = ("gpu", "family", "model", "workload", "dataset", "concurrency")


CLEAR_AT = 0.95  # p_best the winner needs to be clear
TIE_AT = 0.05  # p_best a candidate needs to be tied with the winner
POINT_NOISE_PCT = 3.0  # run-to-run noise of a point figure (docs/metrics.md: where the figure comes from)


@dataclass(slots=True)
class Decision:
    order: list[int]  # candidate indices, best first
    tied: list[int]  # the tied set, winner first (just the winner when clear)
    clear: bool
    intervals: list[tuple[float, float]]  # each candidate's own 95 % interval
    p_best: list[float | None]  # each candidate's chance of being best (None: no replicate to tell)


def check_thresholds(clear_at: float, tie_at: float) -> None:
    """Both p_best thresholds are shares, and a tie needs less than a clear win."""
    if not (np.isfinite(clear_at) and 0 < clear_at <= 1):
        raise ValueError(f"clear at p_best {clear_at}: expected a share in (0, 1]")
    if not (np.isfinite(tie_at) and 0 <= tie_at <= clear_at):
        raise ValueError(f"tie at p_best {tie_at}: expected a share in [0, clear-at {clear_at:g}]")


def p_best(reps: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Each row's share of the columns in which it is the best (ties in a column split it; NaN never wins; a column
    without any finite value is ignored). NaN for every row when no column has a value."""
    reps = np.atleast_2d(np.asarray(reps, dtype=float))
    n = reps.shape[0]
    if reps.size == 0:
        return np.full(n, np.nan)
    s = reps if higher_is_better else -reps
    ok = np.isfinite(s)
    cols = ok.any(axis=0)
    if not cols.any():
        return np.full(n, np.nan)
    s = np.where(ok, s, -np.inf)[:, cols]
    win = (s == s.max(axis=0)[None, :]) & ok[:, cols]
    return (win / win.sum(axis=0)[None, :]).sum(axis=1) / cols.sum()


def rule(clear_at: float = CLEAR_AT, tie_at: float = TIE_AT) -> dict:
    """The p_best rule as stated in every JSON output."""
    return {"clear_at": clear_at, "tie_at": tie_at,
            "text": f"clear when the best point estimate is the best in ≥ {clear_at * 100:g} % of the paired "
                    f"replicates (p_best ≥ {clear_at:g}); tied: every candidate with p_best ≥ {tie_at:g}"}


def decide(values: np.ndarray, reps: np.ndarray, metric: Metric, level: float = LEVEL,
           ivals: list[tuple[float, float]] | None = None, *, clear_at: float = CLEAR_AT,
           tie_at: float = TIE_AT) -> Decision:
    """Apply the p_best rule (module docstring) to candidates with point ``values`` and replicates ``reps``
    (n × B, columns paired across the candidates).

    ``level``: of the candidates' own intervals; ``ivals``: those intervals when the caller already computed
    them (all cells at once)."""
    check_thresholds(clear_at, tie_at)
    values = np.asarray(values, dtype=float)
    n = len(values)
    sign = 1.0 if metric.higher_is_better else -1.0
    score = np.where(np.isfinite(values), sign * values, -np.inf)
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    w = order[0]
    finite = [c for c in order if np.isfinite(values[c])]
    r = np.atleast_2d(np.asarray(reps, dtype=float)) if np.size(reps) else np.full((n, 0), np.nan)
    r = np.where(np.isfinite(values)[:, None], r, np.nan)  # a candidate without a value never wins a column
    unknown = [c for c in finite if not np.isfinite(r[c]).any()]  # a value, no replicate: cannot be ruled out
    p = p_best(r, metric.higher_is_better)
    pb: list[float | None] = [None if (c in unknown or not np.isfinite(p[c])) else float(p[c]) for c in range(n)]
    clear = len(finite) <= 1 or (pb[w] is not None and pb[w] >= clear_at - 1e-12
                                 and not [c for c in unknown if c != w])
    if clear:
        tied = [w]
    else:
        tied = [c for c in finite if c == w or c in unknown or (pb[c] is not None and pb[c] >= tie_at - 1e-12)]
        if len(tied) == 1:  # nobody else reaches tie_at: name the likeliest alternative
            alt = max((c for c in finite if c != w), key=lambda c: (pb[c] or 0.0, -order.index(c)))
            tied.append(alt)
            tied.sort(key=order.index)
    if ivals is None:
        ivals = _interval_list(reps, n, level)
    return Decision(order=order, tied=tied, clear=bool(clear), intervals=ivals, p_best=pb)


def _interval_list(reps: np.ndarray, n: int, level: float = LEVEL) -> list[tuple[float, float]]:
    if not reps.size:
        return [(float("nan"), float("nan"))] * n
    lo, hi = intervals(reps, level)
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def _cand(row: dict, value: float, ival: tuple[float, float], m: Metric | None = None) -> dict:
    out = {"method": row["method"], "depth": int(row["depth"]), "value": _num(value),
           "ci_low": _num(ival[0]), "ci_high": _num(ival[1]), **acceptance_labels(row)}
    out["mode"] = _mode(row)
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
    clear_at: float = CLEAR_AT, tie_at: float = TIE_AT, point_noise_pct: float = POINT_NOISE_PCT,
) -> dict:
    """The winner of every group under the filters, as the CLI's JSON document (DESIGN contract).

    ``model_error=False`` takes the model draws out of simulated cells' replicates (sampling noise only): for
    comparing two simulated runs, whose cells share every draw, so the model's error cancels between them.
    ``margin_pct``: practical equivalence (analysis.equivalence); ``default``: the deployed (method, depth), a
    tie-break of the sensible pick and the reference of each cell's ``default`` entry. ``clear_at``/``tie_at``: the
    p_best thresholds; ``point_noise_pct``: the run-to-run noise given to point figures (cells without replicates)."""
    check_thresholds(clear_at, tie_at)
    if not (np.isfinite(point_noise_pct) and 0 <= point_noise_pct <= 100):
        raise ValueError(f"point noise {point_noise_pct} %: expected 0–100")
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
    drawn = (np.zeros(cells.height, dtype=bool) if model is None or not model.size
             else (model != 1.0).any(axis=1))
    reps, noised = point_noise_replicates(values, reps, cells["cell_id"].to_list(), point_noise_pct)
    has_reps = np.isfinite(reps).any(axis=1) if reps.size else np.zeros(cells.height, dtype=bool)
    uncertainty = [(f"stated noise σ={point_noise_pct:g}%" if noised[i] else
                    "bootstrap+model" if drawn[i] else "bootstrap" if has_reps[i] else None)
                   for i in range(cells.height)]
    out = decide_groups(cells, values, reps, m, best_depth_per_method=best_depth_per_method,
                        draft_models=draft_models, margin_pct=margin_pct, default=default, clear_at=clear_at,
                        tie_at=tie_at, uncertainty=uncertainty)
    out["point_noise_pct"] = point_noise_pct
    return out


def point_noise_replicates(values: np.ndarray, reps: np.ndarray, cell_ids: list[str], noise_pct: float,
                           n_rep: int = BOOTSTRAP_REPLICATES) -> tuple[np.ndarray, np.ndarray]:
    """Replicates for point figures (a finite value, no finite replicate: imported or published cells):
    value × exp(N(0, σ)) per column, σ = ``noise_pct`` / 100 (a stated run-to-run noise, docs/metrics.md),
    seeded from the cell id so the same figure gets the same draws on every run. Independent per cell: two
    published figures' run-to-run noises are not shared. Returns the replicates and which rows were filled."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    reps = np.asarray(reps, dtype=float) if reps.size else np.full((n, n_rep), np.nan)
    missing = np.isfinite(values) & ~np.isfinite(reps).any(axis=1)
    if not missing.any():
        return reps, missing
    reps = reps.copy()
    sigma = noise_pct / 100.0
    for i in np.flatnonzero(missing):
        seed = int(hashlib.sha256(f"point-noise:{cell_ids[i]}".encode()).hexdigest()[:12], 16)
        reps[i] = values[i] * np.exp(np.random.default_rng(seed).normal(0.0, sigma, reps.shape[1]))
    return reps, missing


def _mode(row: dict) -> str:
    """A row's candidate mode (frames give it; hand-built frames may not: their schedule says)."""
    return row.get("mode") or ("schedule" if row.get("schedule") else "fixed")


def _schedule(row: dict) -> tuple[tuple[int, int, int], ...]:
    raw = row.get("schedule")
    ranges = json.loads(raw) if isinstance(raw, str) else raw or ()
    return tuple((int(a), int(b), int(k)) for a, b, k in ranges)


def deploy_for(row: dict, draft_models: dict[str, str] | None = None) -> dict:
    """The full ``vllm serve`` command of a winning cell (analysis.deploy): its model, the TP size it was
    benchmarked with, its drafter, and its mode (a depth schedule, adaptive verification)."""
    none = row["method"] == "none"
    choice = Choice(row["method"], 0 if none else int(row["depth"]), () if none else _schedule(row),
                    not none and _mode(row) == "adaptive")
    return serve_command(row["model"], row.get("gpu_count"), choice, draft_model=row.get("draft_model"),
                         draft_models=draft_models).as_dict()


def decide_groups(cells: pl.DataFrame, values: np.ndarray, reps: np.ndarray, m: Metric, *,
                  best_depth_per_method: bool = False,
                  draft_models: dict[str, str] | None = None,
                  margin_pct: float = equivalence.DEFAULT_MARGIN_PCT,
                  default: tuple[str, int] | None = equivalence.DEFAULT_CANDIDATE,
                  clear_at: float = CLEAR_AT, tie_at: float = TIE_AT,
                  uncertainty: list[str | None] | None = None) -> dict:
    """The p_best rule per group of ``cells`` (rows aligned with ``values`` and ``reps``) as the winners
    document. ``uncertainty``: per row, where its replicates' certainty comes from (``bootstrap``,
    ``bootstrap+model``, ``stated noise σ=…%``); by default ``bootstrap`` wherever a row has replicates."""
    if not (np.isfinite(margin_pct) and 0 <= margin_pct <= 100):
        raise ValueError(f"equivalence margin {margin_pct} %: expected 0–100")
    check_thresholds(clear_at, tie_at)
    out_cells = []
    # frames without a model or dataset column (older exports, hand-built frames): null, one group as before
    cells = cells.with_columns(pl.lit(None, pl.String).alias(k) for k in GROUP if k not in cells.columns)
    all_rows = cells.to_dicts()  # once, not per group: the rerun of a dashboard page waits on this
    all_ivals = _interval_list(reps, cells.height)
    if uncertainty is None:
        has = np.isfinite(reps).any(axis=1) if reps.size else np.zeros(cells.height, dtype=bool)
        uncertainty = ["bootstrap" if h else None for h in has]
    groups = cells.with_row_index("_i").group_by(list(GROUP), maintain_order=True).agg(pl.col("_i"))
    for idx_list in groups["_i"].to_list():
        idx = np.asarray(idx_list, dtype=np.int64)
        rows = [all_rows[i] for i in idx_list]
        ivals = [all_ivals[i] for i in idx_list]
        unc = [uncertainty[i] for i in idx_list]
        v, r = values[idx], (reps[idx] if reps.size else reps)
        group_rows, group_values = rows, v  # every depth measured, for the edge-of-grid flag
        if best_depth_per_method:  # keep each method's best depth only: p_best is among those
            keep = {}
            for j, row in enumerate(rows):
                best = keep.get(row["method"])
                if np.isfinite(v[j]) and (best is None or m.better(v[j], v[best])):
                    keep[row["method"]] = j
            sel = np.array(sorted(keep.values()), dtype=int)
            rows, v, r = [rows[j] for j in sel], v[sel], (r[sel] if r.size else r)
            ivals = [ivals[j] for j in sel]
            unc = [unc[j] for j in sel]
        if not len(rows) or not np.isfinite(v).any():
            continue
        d = decide(v, r, m, ivals=ivals, clear_at=clear_at, tie_at=tie_at)
        w = d.order[0]
        ru = d.order[1] if len(d.order) > 1 and np.isfinite(v[d.order[1]]) else None
        base = next((j for j, row in enumerate(rows) if row["method"] == "none"), None)
        margin = None
        if ru is not None and v[ru]:
            margin = (v[w] - v[ru]) / abs(v[ru]) * 100 * (1 if m.higher_is_better else -1)
        gain, gain_ci = gain_vs(v, r, w, base, m)
        tied = d.tied
        if base is not None and base != w and base in tied and gain_ci and gain_ci[0] is not None and gain_ci[0] > 0:
            # never tie `none` next to a gain over it whose interval excludes 0 (only reachable with tie_at below
            # the interval's tail share, (1 − level) / 2): the paired interval is the stronger statement
            tied = _without(d, base)
        p_of = {j: d.p_best[j] for j in range(len(rows))}
        edge = grid_edge(group_rows, group_values, next(
            j for j, row in enumerate(group_rows) if row["cell_id"] == rows[w]["cell_id"]))
        clear = d.clear
        comps = [u for u in dict.fromkeys(unc) if u]
        out_cells.append({
            **{k: rows[w][k] for k in GROUP},
            "load": labels.load_json(rows[w]["concurrency"]),
            "source_url": rows[w].get("source_url"),  # the public source of an imported/published figure
            "winner": {**_cand(rows[w], v[w], d.intervals[w], m), "p_best": _p(p_of[w])},
            "runner_up": ({**_cand(rows[ru], v[ru], d.intervals[ru], m), "p_best": _p(p_of[ru])}
                          if ru is not None else None),
            "margin_pct": _num(margin) if margin is not None else None,
            "clear": clear,
            "p_best_winner": _p(p_of[w]),
            "tied": [{"method": rows[j]["method"], "depth": int(rows[j]["depth"]), "mode": _mode(rows[j]),
                      "label": _label(rows[j]), "value": _num(v[j]),
                      "p_best": _p(p_of[j])} for j in tied] if not clear else [],
            "candidates": [{"method": rows[j]["method"], "depth": int(rows[j]["depth"]), "mode": _mode(rows[j]),
                            "schedule": [list(r) for r in _schedule(rows[j])] or None,
                            "label": _label(rows[j]), "value": _num(v[j]),
                            "ci_low": _num(d.intervals[j][0]), "ci_high": _num(d.intervals[j][1]),
                            "p_best": _p(p_of[j]), "uncertainty": unc[j]} for j in d.order],
            "uncertainty": _uncertainty_text(comps),
            **equivalence.cell_fields(rows, v, d.order, tied, m, margin_pct, default, ru, p_best=d.p_best,
                                      reps=r, clear=clear),
            "top3": [_cand(rows[j], v[j], d.intervals[j], m) for j in d.order[:3] if np.isfinite(v[j])],
            "at_grid_edge": edge is not None,
            "grid_edge": edge,
            "gain_vs_none_pct": _num(gain) if gain is not None else None,
            "gain_vs_none_ci_pct": gain_ci,
            "gain_vs_none_text": gain_text(gain, gain_ci, "none", winner_is_baseline=w == base),
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
        pick_row = next(r for r in rows if r["method"] == pick["method"] and int(r["depth"]) == pick["depth"]
                        and _mode(r) == pick["mode"] and ([list(x) for x in _schedule(r)] or None) == pick["schedule"])
        pick["deploy"] = deploy_for(pick_row, draft_models) if "model" in pick_row else None
    backends = sorted({row["backend"] for row in all_rows})
    return {"metric": m.name, "higher_is_better": m.higher_is_better, "cells": out_cells, "backends": backends,
            "simulated": "sim" in backends, "value_column": m.value_column,
            "equivalence_margin_pct": margin_pct, "pick_rule": equivalence.RULE,
            "p_best_rule": rule(clear_at, tie_at),
            "whole_window_column": m.whole_window_column}


def _label(row: dict) -> str:
    return candidate(row["method"], row["depth"], _mode(row), row.get("schedule"))


def _without(d: Decision, j: int) -> list[int]:
    """``d``'s tied set without candidate ``j``; a tie left with the winner alone names its likeliest other
    candidate (as :func:`decide` does), or becomes clear when no other candidate has any chance."""
    tied = [c for c in d.tied if c != j]
    if len(tied) == 1:
        rest = [c for c in d.order[1:] if c != j and (d.p_best[c] or 0.0) > 0]
        if rest:
            tied.append(max(rest, key=lambda c: (d.p_best[c] or 0.0, -d.order.index(c))))
            tied.sort(key=d.order.index)
    return tied


def _p(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _uncertainty_text(parts: list[str]) -> str | None:
    """Where the cell's certainty comes from: its candidates' sources, once each (``bootstrap+model``)."""
    if not parts:
        return None
    words = []
    for part in parts:
        for w in part.split("+"):
            if w not in words:
                words.append(w)
    return "+".join(words)
