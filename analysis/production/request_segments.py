"""Acceptance by segment inside one deployment: per-request spec-decode metrics (a gateway's request log, landed by
``spectune requests``) split by one request label — tenant, route, workload or any other.

vLLM's definitions, summed over a segment's requests (vllm/v1/metrics/stats.py ``RequestSpecDecodeMetrics``):
acceptance rate = Σ num_accepted_draft_tokens / Σ num_draft_tokens, acceptance length τ = 1 + Σ accepted /
Σ num_spec_steps, per-position r_i = Σ (steps that accepted ≥ i drafts) / Σ steps. These are the same sums the
server's counters make (spec_decode_num_accepted_tokens, _num_draft_tokens, _num_drafts), split by label.

Intervals are a Poisson bootstrap over requests (ratio of weighted sums; one request is one unit, so unlike the
watch's scrape intervals units do not straddle each other); fewer than :data:`MIN_REQUESTS` requests give no
interval (a width from two requests would be a guess drawn as if measured); above :data:`LARGE` requests the
delta-method interval of the same ratio stands in (the bootstrap's limit, one pass instead of hundreds). A
segment whose requests all accepted nothing (or everything) gets the exact binomial bound over its requests
instead of a zero-width interval. Each segment × config is then re-scored with its own acceptance by the drift
decision (analysis/production/drift.py ``decide``), as a watch segment is.

JSON (``request_segments`` of ``analysis drift``): ``by``, ``label_keys``, ``segments: [{segment, by, value, target,
family, method, depth, gpu, workload, requests, production: {acceptance_rate, acceptance_rate_ci,
acceptance_length, acceptance_length_ci, per_position, drafts, draft_tokens, accepted_tokens, requests,
source}, benchmark, gap_pct, outside_band, status, recommendation, windows: [...]}]``, ``changed``, ``warnings``.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import numpy as np
import polars as pl

from analysis.labels import candidate
from analysis.production import request_load
from analysis.production.drift import DriftOptions, decide
from analysis.production.windows import TOO_FEW, RateInterval

REPLICATES = 400  # as the watch windows (analysis/production/windows.py)
MIN_REQUESTS = 5
LARGE = 1_000  # above this many requests the linearised (delta-method) interval stands in for the bootstrap
CHUNK = 5_000  # requests per block of Poisson weights: memory stays REPLICATES × CHUNK whatever the log size
PREFERRED_KEYS = ("tenant", "route", "workload")
NO_LABEL = "(no label)"
OTHER = "(other values)"
MAX_SEGMENTS = 50  # label values shown (and re-scored) one by one; the rest are one segment
SOURCE = "per-request spec-decode metrics (vLLM --per-request-spec-decode-metrics) from an imported request log"


@dataclass(frozen=True, slots=True)
class SegmentQuery:
    by: str | None = None  # the label to split by; None: tenant, else route, else workload, else the first
    values: tuple[str, ...] = ()  # keep only these label values (default all)
    since: datetime | None = None
    until: datetime | None = None
    window_s: float = 3600.0
    decide: bool = True


def default_key(keys: list[str]) -> str | None:
    return next((k for k in PREFERRED_KEYS if k in keys), keys[0] if keys else None)


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def _edge(lo: float, hi: float, top: float, n: int) -> tuple[float, float]:
    """A zero-width interval at a bound (every request accepted nothing, or everything) widened to the exact 95 %
    binomial bound with the requests as the units: the bootstrap cannot vary what never varied, but 24 requests
    that accepted nothing do not prove a rate of exactly 0."""
    if hi - lo > 1e-12:
        return lo, hi
    edge = 0.025 ** (1 / n)  # Clopper-Pearson: 0 of n → upper 1 − 0.025^(1/n); n of n → lower 0.025^(1/n)
    if hi <= 1e-12:
        return 0.0, top * (1 - edge)
    if lo >= top - 1e-12:
        return top * edge, top
    return lo, hi


def _delta(num: np.ndarray, den: np.ndarray, top: float) -> tuple[float | None, float | None]:
    """The 95 % normal interval of Σnum/Σden from its linearisation over requests (what the bootstrap converges
    to with this many requests, in one pass instead of REPLICATES)."""
    total = den.sum()
    if total <= 0:
        return None, None
    r = num.sum() / total
    n = num.size
    se = float(np.sqrt(np.square(num - r * den).sum() * n / (n - 1)) / total)
    return _edge(max(0.0, r - 1.96 * se), min(top, r + 1.96 * se), top, n)


def ratio_intervals(num: np.ndarray, dens: list[np.ndarray], seed: int, tops: list[float],
                    reps: int = REPLICATES) -> list[tuple[float | None, float | None]]:
    """95 % Poisson-bootstrap intervals of Σnum/Σden over requests, one per denominator, from the same weights;
    ``tops`` are the largest values each ratio can take (1 for the rate, k for accepted per step)."""
    none: list[tuple[float | None, float | None]] = [(None, None)] * len(dens)
    if num.size < MIN_REQUESTS:
        return none
    if num.size > LARGE:
        return [_delta(num, den, top) for den, top in zip(dens, tops, strict=True)]
    rng = np.random.default_rng(seed)
    wn = np.zeros(reps)
    wd = [np.zeros(reps) for _ in dens]
    for start in range(0, num.size, CHUNK):  # weights in blocks: a million requests never make a 1000 × 1e6 matrix
        w = rng.poisson(1.0, size=(reps, min(CHUNK, num.size - start))).astype(float)
        wn += w @ num[start:start + CHUNK]
        for acc, den in zip(wd, dens, strict=True):
            acc += w @ den[start:start + CHUNK]
    out = []
    for d, top in zip(wd, tops, strict=True):
        ok = d > 0
        if ok.sum() < reps // 2:
            out.append((None, None))
            continue
        lo, hi = np.quantile(wn[ok] / d[ok], [0.025, 0.975])
        out.append(_edge(float(lo), float(hi), top, num.size))
    return out


def acceptance(g: pl.DataFrame, seed: int) -> dict:
    """The acceptance of a set of requests: sums, rate, length, per-position rates and 95 % intervals."""
    acc, dtok, steps = (g[c].fill_null(0).to_numpy().astype(float)
                        for c in ("accepted_tokens", "draft_tokens", "spec_steps"))
    depth = int(g["depth"].max() or 1) if "depth" in g.columns else 1
    (rlo, rhi), (llo, lhi) = ratio_intervals(acc, [dtok, steps], seed, [1.0, float(depth)])
    per_pos: list[float | None] = []
    hist = g["acceptance_histogram"].drop_nulls()
    if steps.sum() > 0 and hist.len():
        width = int(hist.list.len().max())  # type: ignore[arg-type]
        h = np.zeros(width)
        for row in hist.to_list():  # a deployment runs one depth per group: rows are one width
            h[:len(row)] += row
        per_pos = [_r(h[i:].sum() / steps.sum()) for i in range(1, width)]
    return {"requests": g.height, "drafts": float(steps.sum()), "draft_tokens": float(dtok.sum()),
            "accepted_tokens": float(acc.sum()),
            "acceptance_rate": _r(acc.sum() / dtok.sum()) if dtok.sum() > 0 else None,
            "acceptance_rate_ci": [_r(rlo), _r(rhi)],
            "acceptance_length": _r(1 + acc.sum() / steps.sum()) if steps.sum() > 0 else None,
            "acceptance_length_ci": [_r(1 + llo) if llo is not None else None,
                                     _r(1 + lhi) if lhi is not None else None],
            "per_position": per_pos}


def _seed(*parts: object) -> int:
    return zlib.crc32("\x1f".join(map(str, parts)).encode())  # stable across runs (hash() is salted)


def _window_start(window_s: float) -> pl.Expr:
    us = int(window_s * 1e6)
    return (pl.col("ts").dt.epoch("us") // us * us).cast(pl.Datetime("us")).alias("window")


def _iso(t: datetime) -> str:
    return t.replace(tzinfo=UTC).isoformat()


def _workload(g: pl.DataFrame) -> tuple[str | None, str | None]:
    """The group's workload (its requests' ``workload`` label, else the log's) and a note when they are mixed."""
    w = g.select(pl.coalesce("label_workload", "log_workload").alias("w"))["w"].unique().to_list()
    if len(w) == 1:
        return w[0], None
    named = sorted(str(x) for x in w if x is not None)
    return None, f"requests of several workloads ({', '.join(named[:5])}): matched to benchmarks of any workload"


GROUP = ("target", "value", "family", "method", "depth", "gpu")


def segments_report(con: duckdb.DuckDBPyConnection, q: SegmentQuery, opts: DriftOptions | None = None) -> dict:
    """Per (deployment, label value, config): acceptance from requests with intervals, windows, drift decision."""
    opts = opts or DriftOptions()
    keys = request_load.label_keys(con)
    by = q.by or default_key(keys)
    doc: dict = {"by": by, "label_keys": keys, "source": SOURCE, "window_s": q.window_s, "segments": [],
                 "changed": [], "warnings": []}
    if by is None:
        doc["warnings"].append("no request log in the store, or its requests carry no labels "
                               "(run `spectune requests FILE --target NAME`)")
        return doc
    r = request_load.rows(con, by, since=q.since, until=q.until).with_columns(pl.col("value").fill_null(NO_LABEL))
    if q.values:
        r = r.filter(pl.col("value").is_in(list(q.values)))
    if r.height == 0:
        doc["warnings"].append(f"no logged requests for label {by!r} in this period")
        return doc
    values = r["value"].value_counts(sort=True)
    if values.height > MAX_SEGMENTS:  # a label such as a user id: each value re-scored would take hours
        keep = values["value"].head(MAX_SEGMENTS).to_list()
        r = r.with_columns(pl.when(pl.col("value").is_in(keep)).then(pl.col("value")).otherwise(pl.lit(OTHER))
                           .alias("value"))
        doc["warnings"].append(f"label {by!r} has {values.height} values: the {MAX_SEGMENTS} with most requests are "
                               f"shown, the other {values.height - MAX_SEGMENTS} together as {OTHER!r}")
    r = r.with_columns(_window_start(q.window_s))
    for key, g in r.group_by(list(GROUP), maintain_order=True):
        grp = dict(zip(GROUP, key, strict=True))
        workload, mixed = _workload(g)
        name = f"{by}={grp['value']}"
        prod = acceptance(g, _seed(grp["target"], name, grp["depth"]))
        prod["source"] = SOURCE
        group = {"segment": f"{grp['target']} · {name}", "family": grp["family"], "method": grp["method"],
                 "depth": grp["depth"], "gpu": grp["gpu"], "workload": workload}
        totals = {"drafts": prod["drafts"], "draft_tokens": prod["draft_tokens"],
                  "accepted_tokens": prod["accepted_tokens"], "requests_ok": float(g.height),
                  "generation_tokens": float(g["completion_tokens"].fill_null(0).sum()),
                  "prompt_tokens": float(g["prompt_tokens"].fill_null(0).sum())}
        ci = tuple(prod["acceptance_rate_ci"])
        period = RateInterval(prod["acceptance_rate"], ci, prod["acceptance_length"],
                              tuple(prod["acceptance_length_ci"]), TOO_FEW if ci[0] is None else "95 %")
        # the period's interval over requests decides "outside the benchmark band" as the watch's does
        row = decide(con, group, totals, opts, period) if q.decide else {**group, "status": "not_decided"}
        if not grp["family"] or not grp["method"]:  # decide() speaks of a targets file; here it was the import
            row["why"] = ("the request log was imported without --family and --method: re-import it with them to "
                          "compare with the benchmark")
        row.update({"segment": name, "by": by, "value": grp["value"], "target": grp["target"],
                    "requests": g.height, "production": prod})
        if mixed:
            row.setdefault("notes", []).append(mixed)
        row["windows"] = [{"window": _iso(w), **acceptance(wg, _seed(grp["target"], name, w))}
                          for (w,), wg in g.group_by(["window"], maintain_order=True)]
        doc["segments"].append(row)
        doc["warnings"] += [w for w in row.get("warnings", []) if w not in doc["warnings"]]
    doc["segments"].sort(key=lambda s: (s["target"], s["value"] in (NO_LABEL, OTHER), s["value"], s["depth"] or 0))
    doc["changed"] = [f"{s['target']} · {s['segment']}" for s in doc["segments"] if s["status"] == "winner_changed"]
    return doc


SEGMENT_SCHEMA = {"target": pl.String, "segment": pl.String, "config": pl.String, "requests": pl.Int64,
                  "acceptance_rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                  "acceptance_length": pl.Float64, "length_ci_low": pl.Float64, "length_ci_high": pl.Float64,
                  "draft_tokens": pl.Float64, "accepted_tokens": pl.Float64, "benchmark_acceptance": pl.Float64,
                  "band_low": pl.Float64, "band_high": pl.Float64, "benchmark": pl.String, "gap_pct": pl.Float64,
                  "status": pl.String, "recommended": pl.String, "clear": pl.Boolean, "deploy": pl.String,
                  "why": pl.String}
WINDOW_SCHEMA = {"target": pl.String, "segment": pl.String, "config": pl.String, "window": pl.Datetime("us"),
                 "requests": pl.Int64, "acceptance_rate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
                 "acceptance_length": pl.Float64, "draft_tokens": pl.Float64}


def segments_frame(doc: dict) -> pl.DataFrame:
    """One row per segment × config of a :func:`segments_report` document (no new numbers)."""
    rows = []
    for s in doc["segments"]:
        p, b, rec = s["production"], s.get("benchmark") or {}, s.get("recommendation") or {}
        rows.append({"target": s["target"], "segment": s["segment"], "config": candidate(s["method"], s["depth"]),
                     "requests": s["requests"], "acceptance_rate": p["acceptance_rate"],
                     "ci_low": p["acceptance_rate_ci"][0], "ci_high": p["acceptance_rate_ci"][1],
                     "acceptance_length": p["acceptance_length"], "length_ci_low": p["acceptance_length_ci"][0],
                     "length_ci_high": p["acceptance_length_ci"][1], "draft_tokens": p["draft_tokens"],
                     "accepted_tokens": p["accepted_tokens"], "benchmark_acceptance": b.get("acceptance_rate"),
                     "band_low": (b.get("band") or [None, None])[0], "band_high": (b.get("band") or [None, None])[1],
                     "benchmark": b.get("provenance"), "gap_pct": s.get("gap_pct"), "status": s["status"],
                     "recommended": candidate(rec["method"], rec["depth"]) if rec else None,
                     "clear": rec.get("clear"), "deploy": rec.get("vllm_args"), "why": s.get("why")})
    return pl.DataFrame(rows, schema=SEGMENT_SCHEMA)


def windows_frame(doc: dict) -> pl.DataFrame:
    rows = [{"target": s["target"], "segment": s["segment"], "config": candidate(s["method"], s["depth"]),
             "window": datetime.fromisoformat(w["window"]).replace(tzinfo=None), "requests": w["requests"],
             "acceptance_rate": w["acceptance_rate"], "ci_low": w["acceptance_rate_ci"][0],
             "ci_high": w["acceptance_rate_ci"][1], "acceptance_length": w["acceptance_length"],
             "draft_tokens": w["draft_tokens"]} for s in doc["segments"] for w in s["windows"]]
    return pl.DataFrame(rows, schema=WINDOW_SCHEMA)
