"""The ``analysis drift`` document: per segment × config, production acceptance by window, the benchmark's
expectation, the gap, restart/config-change annotations and the drift decision.

JSON keys: ``segments: [{segment, family, method, depth, gpu, workload, targets, production, benchmark,
gap_pct, outside_band, status, recommendation, windows: [...], annotations: [...]}]``, ``changed``
(segments whose winner changed), ``outside_band`` (segments whose acceptance left the benchmark band while
the winner held), ``alert`` (either: ``analysis drift`` exits 3), ``period`` (first and last sample),
``warnings``. Every timestamp is ISO 8601 in UTC with its offset.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import datetime

import duckdb
import polars as pl

from analysis.production import deltas, load
from analysis.production.ab import histogram_intervals, readout
from analysis.production.drift import ALERTS, DriftOptions, decide
from analysis.production.windows import GROUP, WindowSpec, acceptance_windows, iso_utc, rate_interval
from ingest.errors import UsageError


@dataclass(frozen=True, slots=True)
class ProductionQuery:
    segments: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    window_s: float = 3600.0
    decide: bool = True  # run the drift decision (re-scoring) per segment


def interval_frames(con: duckdb.DuckDBPyConnection, q: ProductionQuery) -> tuple[pl.DataFrame, pl.DataFrame]:
    s = load.samples(con, segments=q.segments, since=q.since, until=q.until)
    iv = deltas.intervals(s)
    targets = sorted(set(iv["target"].to_list())) if iv.height else []
    pos = load.positions(con, targets, q.since, q.until).rename({"accepted": "v"})
    pos_iv = deltas.keyed_intervals(pos, ["position"], iv.select("target", "ts", "reset")) if pos.height else None
    return iv, pos_iv if pos_iv is not None else pos.clear()


def annotations(con: duckdb.DuckDBPyConnection, iv: pl.DataFrame, targets: list[str]) -> list[dict]:
    out = [{"ts": iso_utc(r["ts"]), "target": r["target"], "kind": "restart", "detail": "counters reset"}
           for r in deltas.restarts(iv).iter_rows(named=True)]
    ev = load.events(con, targets).filter(pl.col("kind").is_in(["config_change", "relabel"]))
    out += [{"ts": iso_utc(r["ts"]), "target": r["target"], "kind": r["kind"], "detail": r["detail"]}
            for r in ev.iter_rows(named=True)]
    return sorted(out, key=lambda a: a["ts"])


def production_report(con: duckdb.DuckDBPyConnection, q: ProductionQuery, opts: DriftOptions | None = None) -> dict:
    opts = opts or DriftOptions()
    iv, pos_iv = interval_frames(con, q)
    segs, warnings = [], []
    if iv.height == 0:
        return {"segments": [], "changed": [], "outside_band": [], "alert": [], "period": None,
                "warnings": ["no watch samples for these segments and times (run `spectune watch TARGETS`)"]}
    windows = acceptance_windows(iv, pos_iv, WindowSpec(q.window_s))
    for key, g in iv.group_by(list(GROUP), maintain_order=True):
        group = dict(zip(GROUP, key, strict=True))
        totals = {c: float(g[c].fill_null(0).sum()) for c in deltas.COUNTERS}
        targets = sorted(set(g["target"].to_list()))
        arrays = (g.filter(pl.col("draft_tokens").is_not_null())[c].fill_null(0).to_numpy().astype(float)
                  for c in ("accepted_tokens", "draft_tokens", "drafts"))
        period = rate_interval(*arrays, seed=zlib.crc32(str(key).encode()))
        row = decide(con, group, totals, opts, period) if q.decide else {**group, "status": "not_decided"}
        row["targets"] = targets
        row["windows"] = [w for w in windows if all(w[k] == group[k] for k in GROUP)]
        row["annotations"] = annotations(con, g, targets)
        segs.append(row)
        warnings += [w for w in row.get("warnings", []) if w not in warnings]
    return {"segments": segs, "changed": [s["segment"] for s in segs if s["status"] == "winner_changed"],
            "outside_band": [s["segment"] for s in segs if s["status"] == "acceptance_outside_band"],
            "alert": [s["segment"] for s in segs if s["status"] in ALERTS],
            "period": {"start": iso_utc(iv["ts"].min()), "end": iso_utc(iv["ts"].max())},
            "window_s": q.window_s, "warnings": warnings}


def ab_report(con: duckdb.DuckDBPyConnection, segments: tuple[str, ...], a: str | None, b: str | None,
              since: datetime | None, until: datetime | None, opts) -> dict:
    """The A/B readout of two targets (given, or the two of a segment)."""
    s = load.samples(con, segments=segments if a is None else (), targets=(a, b) if a else (), since=since,
                     until=until)
    if a is None:
        names = sorted(set(s["target"].to_list()))
        if len(names) != 2:
            raise UsageError(f"segment {segments[0]!r} has {len(names)} target(s) ({', '.join(names)}); "
                             "an A/B needs exactly two: pass --a and --b")
        a, b = names
    iv = deltas.intervals(s)
    hist = histogram_intervals(load.histograms(con, [a, b], since, until), iv)
    return readout(iv, hist, a, b, opts)
