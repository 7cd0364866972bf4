"""Reading the request-log tables (``spectune requests``, ingest/requestlog.py): the only SQL behind
acceptance by segment inside one deployment (analysis/production/request_segments.py).

A store created before request logs existed (schema < 5, opened read-only before its upgrade) has neither table;
it reads as empty. Label names and values are bound parameters, never SQL text.
"""

from __future__ import annotations

from datetime import datetime

import duckdb
import polars as pl

from ingest import sql

ROW_SCHEMA = {"target": pl.String, "family": pl.String, "method": pl.String, "gpu": pl.String,
              "log_workload": pl.String, "ts": pl.Datetime("us"), "value": pl.String, "label_workload": pl.String,
              "depth": pl.Int32, "prompt_tokens": pl.Int32, "completion_tokens": pl.Int32, "spec_steps": pl.Int32,
              "draft_tokens": pl.Int32, "accepted_tokens": pl.Int32, "acceptance_histogram": pl.List(pl.Int32)}


def has_request_logs(con: duckdb.DuckDBPyConnection) -> bool:
    row = sql.one(con, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'request_log_rows'")
    if not row or not row[0]:
        return False
    return bool(sql.one(con, "SELECT count(*) FROM (SELECT 1 FROM request_log_rows LIMIT 1)")[0])  # type: ignore[index]


def label_keys(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Label names the stored requests carry, sorted."""
    if not has_request_logs(con):
        return []
    return [r[0] for r in con.execute(
        "SELECT DISTINCT unnest(json_keys(labels)) AS k FROM request_log_rows ORDER BY k").fetchall()]


def _path(key: str) -> str:
    """A JSON path to one top-level key, whatever characters it holds (bound as a parameter)."""
    return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def segment_values(con: duckdb.DuckDBPyConnection, by: str) -> list[str | None]:
    if not has_request_logs(con):
        return []
    return [r[0] for r in con.execute("SELECT DISTINCT json_extract_string(labels, ?) AS v FROM request_log_rows "
                                      "ORDER BY v NULLS LAST", [_path(by)]).fetchall()]


def rows(con: duckdb.DuckDBPyConnection, by: str, *, since: datetime | None = None,
         until: datetime | None = None) -> pl.DataFrame:
    """Every stored request with its deployment's config, its ``by`` label (``value``) and ``workload`` label."""
    if not has_request_logs(con):
        return pl.DataFrame(schema=ROW_SCHEMA)
    # the period as bound values (NULL: open end), so the SQL text is fixed
    out = sql.frame(con, """
        SELECT l.target, l.family, l.method, l.gpu, l.workload AS log_workload, r.ts,
               json_extract_string(r.labels, ?) AS value, json_extract_string(r.labels, ?) AS label_workload,
               r.depth, r.prompt_tokens, r.completion_tokens, r.spec_steps, r.draft_tokens, r.accepted_tokens,
               r.acceptance_histogram
        FROM request_log_rows r JOIN request_logs l USING (log_id)
        WHERE (?::TIMESTAMP IS NULL OR r.ts >= ?::TIMESTAMP) AND (?::TIMESTAMP IS NULL OR r.ts <= ?::TIMESTAMP)
        ORDER BY l.target, r.ts, r.log_id, r.line""", [_path(by), _path("workload"), since, since, until, until])
    return out.cast(ROW_SCHEMA) if out.height else pl.DataFrame(schema=ROW_SCHEMA)
