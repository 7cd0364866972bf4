"""Reading the watch tables (ingest/watch/) and the matching benchmark cells: the package's only SQL.

A store created before the watch tables existed has none of them; it reads as empty frames. A store written
before the watch validated what it stores may hold values that lie (ingest/watch/exposition.py refuses them
now): they read as unknown — a counter that is non-finite, negative or ≥ 2**53 as null, a histogram bucket
whose bound is NaN (or whose count lies) not at all — so analysis skips them instead of crashing.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from ingest import sql

MAX_COUNTER = 2**53  # as ingest/watch/exposition.MAX_COUNTER: beyond it a float counter is not a count
COUNTER_COLS = ("drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "prompt_tokens", "requests_ok")
SAMPLE_COLS = ("target", "ts", "source", "segment", "family", "method", "depth", "gpu", "gpu_count", "workload",
               "drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "prompt_tokens", "requests_ok",
               "process_start_s")


def _sane(col: str) -> str:
    return f"(isfinite({col}) AND {col} >= 0 AND {col} < {MAX_COUNTER})"


def _counter(col: str) -> str:
    return f"CASE WHEN {_sane(col)} THEN {col} END AS {col}"


def has_watch(con: duckdb.DuckDBPyConnection) -> bool:
    row = sql.one(con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'watch_samples'")
    return bool(row and row[0])


def _where(segments: tuple[str, ...], targets: tuple[str, ...], since: datetime | None,
           until: datetime | None, alias: str = "") -> tuple[str, list]:
    p = f"{alias}." if alias else ""
    clauses, params = [], []
    if segments:
        clauses.append(f"{p}segment IN (SELECT unnest(?))")
        params.append(list(segments))
    if targets:
        clauses.append(f"{p}target IN (SELECT unnest(?))")
        params.append(list(targets))
    if since is not None:
        clauses.append(f"{p}ts >= ?")
        params.append(since)
    if until is not None:
        clauses.append(f"{p}ts <= ?")
        params.append(until)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def samples(con: duckdb.DuckDBPyConnection, *, segments: tuple[str, ...] = (), targets: tuple[str, ...] = (),
            since: datetime | None = None, until: datetime | None = None) -> pl.DataFrame:
    """Watch samples, ordered by target and time."""
    if not has_watch(con):
        return pl.DataFrame(schema={c: pl.Float64 for c in SAMPLE_COLS})
    where, params = _where(segments, targets, since, until)
    cols = ", ".join(_counter(c) if c in COUNTER_COLS else c for c in SAMPLE_COLS)
    return sql.frame(con, f"SELECT {cols} FROM watch_samples{where} ORDER BY target, ts", params)


def positions(con: duckdb.DuckDBPyConnection, targets: list[str], since: datetime | None = None,
              until: datetime | None = None) -> pl.DataFrame:
    if not has_watch(con) or not targets:
        return pl.DataFrame(schema={"target": pl.String, "ts": pl.Datetime("us"), "position": pl.Int16,
                                    "accepted": pl.Float64})
    where, params = _where((), tuple(targets), since, until)
    where += f" AND {_sane('accepted')}"  # _where always has the target clause here
    return sql.frame(con, f"SELECT target, ts, position, accepted FROM watch_positions{where} "
                          "ORDER BY target, position, ts", params)


def histograms(con: duckdb.DuckDBPyConnection, targets: list[str], since: datetime | None = None,
               until: datetime | None = None) -> pl.DataFrame:
    if not has_watch(con) or not targets:
        return pl.DataFrame(schema={"target": pl.String, "ts": pl.Datetime("us"), "metric": pl.String,
                                    "le": pl.Float64, "count": pl.Float64})
    where, params = _where((), tuple(targets), since, until)
    where += f" AND NOT isnan(le) AND le > '-inf'::DOUBLE AND {_sane('count')}"  # _where has the target clause
    return sql.frame(con, f"SELECT target, ts, metric, le, count FROM watch_histograms{where} "
                          "ORDER BY target, metric, le, ts", params)


def events(con: duckdb.DuckDBPyConnection, targets: list[str]) -> pl.DataFrame:
    if not has_watch(con) or not targets:
        return pl.DataFrame(schema={"target": pl.String, "ts": pl.Datetime("us"), "kind": pl.String,
                                    "detail": pl.String})
    return sql.frame(con, "SELECT target, ts, kind, detail FROM watch_events WHERE target IN (SELECT unnest(?)) "
                          "ORDER BY ts", [targets])


def segment_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    if not has_watch(con):
        return []
    return [r[0] for r in con.execute("SELECT DISTINCT segment FROM watch_samples ORDER BY 1").fetchall()]


def benchmark_cells(con: duckdb.DuckDBPyConnection, family: str, method: str, depth: int, workload: str | None,
                    gpu: str | None) -> pl.DataFrame:
    """Measured or simulated cells of one (family, method, depth[, workload][, gpu]) with acceptance, their
    counter totals, and the 2.5/97.5 % of their finite bootstrap replicates (null for a counters-only cell: its
    replicates of acceptance are NaN — no per-request data to resample)."""
    clauses = ["c.status = 'ok'", "isfinite(c.acceptance_rate)", "c.family = ?", "c.method = ?", "c.depth = ?"]
    params: list = [family, method, depth]
    if workload:
        clauses.append("c.workload = ?")
        params.append(workload)
    if gpu:
        clauses.append("c.gpu = ?")
        params.append(gpu)
    return sql.frame(con, f"""
        SELECT c.run_id, c.cell_id, c.gpu, c.workload, c.concurrency, r.backend, c.acceptance_rate,
               c.acceptance_length, c.acceptance_source, c.drafts, c.draft_tokens, c.accepted_tokens,
               (SELECT quantile_cont(b.acceptance_rate, 0.025) FROM cell_bootstrap b
                 WHERE b.run_id = c.run_id AND b.cell_id = c.cell_id AND isfinite(b.acceptance_rate)) AS rate_lo,
               (SELECT quantile_cont(b.acceptance_rate, 0.975) FROM cell_bootstrap b
                 WHERE b.run_id = c.run_id AND b.cell_id = c.cell_id AND isfinite(b.acceptance_rate)) AS rate_hi
        FROM cells c JOIN runs r USING (run_id)
        WHERE {' AND '.join(clauses)} ORDER BY c.gpu, c.workload, c.concurrency""", params)
