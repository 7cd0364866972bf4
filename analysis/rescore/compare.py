"""Comparing two re-scored traces: how the workload mix drifted and whether the recommendation changed.

Owns the comparison of two analysis.rescore documents (same options, two traces — e.g. last month and
this month). Mix drift per workload is the change in share (percentage points) and, overall, the total
variation distance ½·Σ|a − b| (0 = same mix, 1 = disjoint). A recommendation *changes* for a
(family, gpu, shard) when the winning (method, depth) differs; when either side is a tie that includes
the other's winner, the change is flagged ``within_tie`` (not a real change).
"""

from __future__ import annotations

import polars as pl

from analysis.labels import candidate


def mix_drift(a: dict, b: dict) -> tuple[pl.DataFrame, float]:
    ma, mb = a["trace"]["workload_mix"], b["trace"]["workload_mix"]
    names = sorted(set(ma) | set(mb))
    rows = [{"workload": w, "share_a": ma.get(w, 0.0), "share_b": mb.get(w, 0.0),
             "delta_pp": round((mb.get(w, 0.0) - ma.get(w, 0.0)) * 100, 3)} for w in names]
    tvd = 0.5 * sum(abs(mb.get(w, 0.0) - ma.get(w, 0.0)) for w in names)
    frame = pl.DataFrame(rows, schema={"workload": pl.String, "share_a": pl.Float64, "share_b": pl.Float64,
                                       "delta_pp": pl.Float64})
    return frame, round(tvd, 6)


def _key(r: dict) -> tuple[str, str, str]:
    return r["family"], r["gpu"], r["shard"]


def _in(r: dict, method: str, depth: int) -> bool:
    return any(t["method"] == method and t["depth"] == depth for t in r["tied"])


def recommendation_changes(a: dict, b: dict) -> pl.DataFrame:
    ra = {_key(r): r for r in a["recommendations"]}
    rb = {_key(r): r for r in b["recommendations"]}
    rows = []
    for key in sorted(set(ra) | set(rb)):
        x, y = ra.get(key), rb.get(key)
        wa = candidate(x['method'], x['depth']) if x else None
        wb = candidate(y['method'], y['depth']) if y else None
        changed = wa != wb
        within_tie = bool(changed and x and y and (_in(x, y["method"], y["depth"]) or _in(y, x["method"], x["depth"])))
        rows.append({"family": key[0], "gpu": key[1], "shard": key[2], "winner_a": wa, "winner_b": wb,
                     "changed": changed, "within_tie": within_tie,
                     "gain_a_pct": x["gain_vs_default_pct"] if x else None,
                     "gain_b_pct": y["gain_vs_default_pct"] if y else None,
                     "vllm_args_b": y["vllm_args"] if y else None})
    return pl.DataFrame(rows, schema={"family": pl.String, "gpu": pl.String, "shard": pl.String,
                                      "winner_a": pl.String, "winner_b": pl.String, "changed": pl.Boolean,
                                      "within_tie": pl.Boolean, "gain_a_pct": pl.Float64, "gain_b_pct": pl.Float64,
                                      "vllm_args_b": pl.String})


def compare(a: dict, b: dict) -> dict:
    drift, tvd = mix_drift(a, b)
    changes = recommendation_changes(a, b)
    return {"mix_drift": drift, "total_variation": tvd, "changes": changes,
            "any_change": bool(changes.filter(pl.col("changed") & ~pl.col("within_tie")).height)}
