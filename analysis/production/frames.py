"""The production documents (analysis.production.report) as flat polars frames for charts and exports.

No new numbers: one row per window (acceptance with its interval — or ``interval: "too few tokens to tell"``
and none —, the benchmark expectation and band repeated so a chart can draw them), per window × position,
per annotation, per segment recommendation, and per A/B arm × metric. Times are UTC-aware datetimes.
"""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from analysis.labels import candidate

UTC_TS = pl.Datetime("us", "UTC")
WINDOW_SCHEMA = {"segment": pl.String, "config": pl.String, "window": UTC_TS, "acceptance_rate": pl.Float64,
                 "ci_low": pl.Float64, "ci_high": pl.Float64, "interval": pl.String, "acceptance_length": pl.Float64,
                 "draft_tokens": pl.Float64, "intervals": pl.Int64, "resets": pl.Int64,
                 "expected": pl.Float64, "band_low": pl.Float64, "band_high": pl.Float64,
                 "expected_provenance": pl.String}


def _dt(text: str) -> datetime:
    """An ISO 8601 timestamp as an aware UTC datetime (one without an offset is read as UTC, as stored)."""
    ts = datetime.fromisoformat(text)
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def _config(s: dict) -> str:
    return candidate(s.get('method'), s.get('depth'))


def windows(doc: dict) -> pl.DataFrame:
    rows = []
    for s in doc["segments"]:
        b = s.get("benchmark") or {}
        for w in s["windows"]:
            rows.append({"segment": s["segment"], "config": _config(s), "window": _dt(w["window"]),
                         "acceptance_rate": w["acceptance_rate"], "ci_low": w["acceptance_rate_ci"][0],
                         "ci_high": w["acceptance_rate_ci"][1], "interval": w.get("interval"),
                         "acceptance_length": w["acceptance_length"],
                         "draft_tokens": w["draft_tokens"], "intervals": w["intervals"], "resets": w["resets"],
                         "expected": b.get("acceptance_rate"), "band_low": (b.get("band") or [None, None])[0],
                         "band_high": (b.get("band") or [None, None])[1],
                         "expected_provenance": b.get("provenance")})
    return pl.DataFrame(rows, schema=WINDOW_SCHEMA)


def positions(doc: dict) -> pl.DataFrame:
    rows = [{"segment": s["segment"], "config": _config(s), "window": _dt(w["window"]), "position": i + 1,
             "acceptance": r}
            for s in doc["segments"] for w in s["windows"] for i, r in enumerate(w["per_position"])]
    return pl.DataFrame(rows, schema={"segment": pl.String, "config": pl.String, "window": UTC_TS,
                                      "position": pl.Int64, "acceptance": pl.Float64})


def annotations(doc: dict) -> pl.DataFrame:
    rows = [{"segment": s["segment"], "ts": _dt(a["ts"]), "target": a["target"], "kind": a["kind"],
             "detail": a["detail"]} for s in doc["segments"] for a in s["annotations"]]
    return pl.DataFrame(rows, schema={"segment": pl.String, "ts": UTC_TS, "target": pl.String,
                                      "kind": pl.String, "detail": pl.String})


def recommendations(doc: dict) -> pl.DataFrame:
    rows = []
    for s in doc["segments"]:
        rec = s.get("recommendation") or {}
        b = s.get("benchmark") or {}
        rows.append({"segment": s["segment"], "running": _config(s), "family": s.get("family"), "gpu": s.get("gpu"),
                     "workload": s.get("workload"), "targets": ", ".join(s.get("targets", [])),
                     "production_acceptance": s["production"]["acceptance_rate"],
                     "production_ci_low": (s["production"].get("acceptance_rate_ci") or [None, None])[0],
                     "production_ci_high": (s["production"].get("acceptance_rate_ci") or [None, None])[1],
                     "outside_band": s.get("outside_band"),
                     "benchmark_acceptance": b.get("acceptance_rate"), "benchmark": b.get("provenance"),
                     "gap_pct": s.get("gap_pct"), "status": s["status"],
                     "recommended": candidate(rec['method'], rec['depth']) if rec else None,
                     "clear": rec.get("clear"), "gain_vs_running_pct": rec.get("gain_vs_deployed_pct"),
                     "deploy": rec.get("vllm_args"), "why": s.get("why")})
    return pl.DataFrame(rows, schema={"segment": pl.String, "running": pl.String, "family": pl.String,
                                      "gpu": pl.String, "workload": pl.String, "targets": pl.String,
                                      "production_acceptance": pl.Float64, "production_ci_low": pl.Float64,
                                      "production_ci_high": pl.Float64, "outside_band": pl.Boolean,
                                      "benchmark_acceptance": pl.Float64,
                                      "benchmark": pl.String, "gap_pct": pl.Float64, "status": pl.String,
                                      "recommended": pl.String, "clear": pl.Boolean,
                                      "gain_vs_running_pct": pl.Float64, "deploy": pl.String, "why": pl.String})


def ab_arms(doc: dict) -> pl.DataFrame:
    rows = []
    for side in ("a", "b"):
        arm = doc.get(side) or {}
        for metric, m in (arm.get("metrics") or {}).items():
            rows.append({"arm": side.upper(), "target": arm["target"],
                         "config": candidate(arm.get("method"), arm.get("depth")), "metric": metric,
                         "value": m["value"],
                         "ci_low": m["ci"][0], "ci_high": m["ci"][1]})
    return pl.DataFrame(rows, schema={"arm": pl.String, "target": pl.String, "config": pl.String, "metric": pl.String,
                                      "value": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64})
