"""Writing watch samples and events to the store, idempotently: a (target, ts) already there is kept as is.

Rows go in through DuckDB's Arrow path with ``INSERT OR IGNORE`` on the tables' primary keys, one
transaction per scrape round, so a watcher killed mid-write leaves whole rounds only and a re-run or an
overlapping Prometheus backfill adds nothing twice. The connection is opened per round
(:func:`ingest.open_store.session`) so dashboards and other writers can take turns with a long-running watch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ingest import open_store, schema, sql, store
from ingest.watch.exposition import VALUE_FIELDS, Sample
from ingest.watch.targets import Target

TABLES = ("watch_samples", "watch_positions", "watch_histograms", "watch_events")


@dataclass(slots=True)
class Row:
    """One sample of one stored target (a configured target, or one instance behind a Prometheus target)."""

    target_id: str
    target: Target
    ts: float  # unix seconds
    sample: Sample
    source: str = "metrics"


@dataclass(slots=True)
class Event:
    target_id: str
    ts: float
    kind: str  # error | config_change | relabel
    detail: str


@dataclass(slots=True)
class Batch:
    rows: list[Row] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def _dt(ts: float) -> datetime:
    # millisecond resolution: Prometheus timestamps are ms, and a direct scrape needs no finer key
    return datetime.fromtimestamp(round(ts, 3), UTC).replace(tzinfo=None)


_TS = pl.Datetime("us")


def frames(batch: Batch) -> dict[str, pl.DataFrame]:
    samples, positions, hists = [], [], []
    for r in batch.rows:
        t, s, ts = r.target, r.sample, _dt(r.ts)
        samples.append({"target": r.target_id, "ts": ts, "source": r.source, "segment": t.segment,
                        "family": t.family, "method": t.method, "depth": t.depth, "gpu": t.gpu,
                        "gpu_count": t.gpu_count, "workload": t.workload,
                        **{k: s.values.get(k) for k in VALUE_FIELDS}, "process_start_s": s.process_start_s})
        positions += [{"target": r.target_id, "ts": ts, "position": i + 1, "accepted": float(v)}
                      for i, v in enumerate(s.per_pos)]
        hists += [{"target": r.target_id, "ts": ts, "metric": m, "le": float(le), "count": float(c)}
                  for m, h in s.histograms.items() for le, c in h.items()]
    out = {}
    if samples:
        schema_over = {k: pl.Float64 for k in (*VALUE_FIELDS, "process_start_s")}
        out["watch_samples"] = pl.DataFrame(samples, schema_overrides={"ts": _TS, "depth": pl.Int32,
                                                                       "gpu_count": pl.Int32, **schema_over},
                                            infer_schema_length=None)
    if positions:
        out["watch_positions"] = pl.DataFrame(positions, schema_overrides={"ts": _TS, "position": pl.Int16})
    if hists:
        out["watch_histograms"] = pl.DataFrame(hists, schema_overrides={"ts": _TS})
    if batch.events:
        out["watch_events"] = pl.DataFrame(
            [{"target": e.target_id, "ts": _dt(e.ts), "kind": e.kind, "detail": e.detail} for e in batch.events],
            schema_overrides={"ts": _TS})
    return out


def _insert_ignore(con, table: str, frame: pl.DataFrame) -> int:
    cols = [c for c in schema.column_names(schema.metadata.tables[table]) if c in frame.columns]
    view = f"_incoming_{table}"
    con.register(view, frame.select(cols).to_arrow())
    try:
        before = sql.one(con, f"SELECT count(*) FROM {table}")[0]
        names = ", ".join(f'"{c}"' for c in cols)
        con.execute(f"INSERT OR IGNORE INTO {table} ({names}) SELECT {names} FROM {view}")
        return int(sql.one(con, f"SELECT count(*) FROM {table}")[0] - before)
    finally:
        con.unregister(view)


def write(con, batch: Batch) -> dict[str, int]:
    """Land one round in one transaction; returns rows added per table (0 for what was already there)."""
    out = frames(batch)
    added = dict.fromkeys(TABLES, 0)
    if not out:
        return added
    with store.transaction(con):
        for table in TABLES:
            if table in out:
                added[table] = _insert_ignore(con, table, out[table])
    return added


def write_to(db: str | Path | None, batch: Batch) -> dict[str, int]:
    with open_store.session(db) as con:
        return write(con, batch)


def last_sample(con, target_id: str) -> dict | None:
    """The newest stored sample row of a target (for relabel/config-change detection across restarts)."""
    rows = sql.frame(con, "SELECT * FROM watch_samples WHERE target = ? ORDER BY ts DESC LIMIT 1", [target_id])
    return rows.row(0, named=True) if rows.height else None
