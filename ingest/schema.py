"""The store's schema, declared once with SQLAlchemy Core so it can target another SQL database later.

DuckDB is the default engine; DDL is compiled from these tables with duckdb-engine's dialect. Bump
:data:`SCHEMA_VERSION` on any change; :func:`ingest.store.connect` refuses a DB from a newer version.
Integer keys use ``autoincrement=False`` because duckdb-engine would otherwise emit SERIAL.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    DateTime,
    Double,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
)
from sqlalchemy.schema import CreateTable

SCHEMA_VERSION = 1
metadata = MetaData()

meta = Table(
    "meta", metadata,
    Column("key", String, primary_key=True),
    Column("value", String, nullable=False),
)

runs = Table(
    "runs", metadata,
    Column("run_id", String, primary_key=True),
    Column("started_at", DateTime),
    Column("finished_at", DateTime),
    Column("host", String),
    Column("gpu_model", String),
    Column("gpu_count", Integer),
    Column("backend", String, nullable=False),  # sim | vllm | import
    Column("engine_version", String),
    Column("matrix_hash", String),
    Column("source", String),
    Column("file_hash", String),
    Column("importer", String),
    Column("notes", String),
)

_LATENCIES = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
_PCTS = ("p50", "p90", "p99")

cells = Table(
    "cells", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("method", String, nullable=False),
    Column("depth", Integer, nullable=False, autoincrement=False),
    Column("family", String, nullable=False),
    Column("model", String, nullable=False),
    Column("workload", String, nullable=False),
    Column("gpu", String, nullable=False),
    Column("concurrency", Integer, nullable=False, autoincrement=False),
    Column("status", String, nullable=False),  # ok | failed
    Column("error", String),
    Column("n_requests", Integer),
    Column("n_failed", Integer),
    Column("window_s", Double),
    Column("gpu_count", Integer),
    Column("output_tokens", Double),
    Column("drafts", Double),
    Column("draft_tokens", Double),
    Column("accepted_tokens", Double),
    Column("acceptance_rate", Double),
    Column("acceptance_length", Double),
    Column("output_throughput", Double),
    Column("output_throughput_per_gpu", Double),
    Column("request_throughput", Double),
    *[Column(f"{p}_{lat}", Double) for lat in _LATENCIES for p in _PCTS],
    Column("mean_ttft_ms", Double),
    Column("mean_tpot_ms", Double),
    Column("mean_e2e_ms", Double),
    Column("written_at", DateTime),
)

positions = Table(
    "positions", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("position", SmallInteger, primary_key=True, autoincrement=False),  # 1-based draft position
    Column("acceptance", Double, nullable=False),  # r_i = accepted at position i / drafts
)

requests = Table(
    "requests", metadata,
    Column("run_id", String, nullable=False),
    Column("cell_id", String, nullable=False),
    Column("request_index", Integer, nullable=False),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("ttft_ms", Double),
    Column("tpot_ms", Double),
    Column("e2e_ms", Double),
    Column("start_s", Double),
    Column("drafted_tokens", Double),
    Column("accepted_tokens", Double),
    Column("ok", Boolean),
    Column("error", String),
)

# Bootstrap replicates of each cell's headline metrics (Poisson bootstrap over its requests),
# materialised when the cell lands so winners with confidence never rescan request rows.
BOOTSTRAP_METRICS: tuple[str, ...] = (
    "output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate", "acceptance_length",
)
cell_bootstrap = Table(
    "cell_bootstrap", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("replicate", SmallInteger, primary_key=True, autoincrement=False),
    *[Column(m, Double) for m in BOOTSTRAP_METRICS],
)

# Model-uncertainty factors of simulated cells (one row per replicate = model draw; analysis/model_draws.py):
# the cell's bootstrap replicate j is multiplied by draw j's factor, so simulated intervals carry the model's
# error as well as sampling noise. Measured and imported cells have no rows here.
model_draws = Table(
    "model_draws", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("replicate", SmallInteger, primary_key=True, autoincrement=False),
    *[Column(m, Double) for m in BOOTSTRAP_METRICS],
)

traces = Table(
    "traces", metadata,
    Column("trace_id", String, primary_key=True),  # = file hash: the same file twice is one trace
    Column("name", String),
    Column("format", String),
    Column("file_hash", String, nullable=False),
    Column("source_path", String),
    Column("created_at", DateTime),
    Column("requests", Integer),
    Column("workload_mix", String),  # JSON {workload: fraction}
    Column("workload_assignment", String),
)

trace_requests = Table(
    "trace_requests", metadata,
    Column("trace_id", String, nullable=False),
    Column("request_index", Integer, nullable=False),
    Column("timestamp_s", Double),
    Column("input_tokens", Integer),
    Column("output_tokens", Integer),
    Column("workload", String),
    Column("shard", String),
    Column("drafted_tokens", Double),
    Column("accepted_tokens", Double),
)

# Published measurements (the published-results CSV shape), one row per measurement with its source columns
# intact. Rows whose metric has a `cells` column also land in a cell of the same import run (cell_id,
# cell_column); the rest (speedups, cumulative per-position rates, ...) live only here.
published = Table(
    "published", metadata,
    Column("run_id", String, primary_key=True),
    Column("line", Integer, primary_key=True, autoincrement=False),  # line in the imported CSV
    Column("source_url", String),
    Column("source_title", String),
    Column("published", String),
    Column("engine", String),
    Column("gpu", String),
    Column("gpu_count", Integer),
    Column("model", String),
    Column("model_family", String),
    Column("moe", Boolean),
    Column("method", String),
    Column("depth", String),
    Column("workload", String),
    Column("dataset", String),
    Column("concurrency", String),
    Column("temperature", Double),
    Column("metric", String, nullable=False),
    Column("value", Double, nullable=False),
    Column("unit", String),
    Column("notes", String),
    Column("cell_id", String),
    Column("cell_column", String),
)


def ddl_statements() -> list[str]:
    """CREATE TABLE IF NOT EXISTS statements for every table, in DuckDB's dialect."""
    from duckdb_engine import Dialect

    dialect = Dialect()
    out = []
    for table in metadata.sorted_tables:
        sql = str(CreateTable(table, if_not_exists=True).compile(dialect=dialect)).strip()
        out.append(sql)
    return out


def column_names(table: Table) -> list[str]:
    return [c.name for c in table.columns]
