"""The store's schema, declared once with SQLAlchemy Core so it can target another SQL database later.

DuckDB is the default engine; DDL is compiled from these tables with duckdb-engine's dialect. Bump
:data:`SCHEMA_VERSION` on any change; :func:`ingest.store.connect` refuses a DB from a newer version.
Integer keys use ``autoincrement=False`` because duckdb-engine would otherwise emit SERIAL.

Run-time code never imports this module (SQLAlchemy costs ~0.5 s of start-up on every command): the DDL, the
column lists and the version are compiled once into the committed module ``ingest/ddl.py``. After changing a
table, regenerate it with ``python -m ingest.schema`` (a test fails while it is stale).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    ARRAY,
    BLOB,
    JSON,
    BigInteger,
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

SCHEMA_VERSION = 7
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
    # v4: nullable — NULL is "load not stated" (a published figure without a load), never 0 and never pooled
    Column("concurrency", Integer, autoincrement=False),
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
    # Where a measured cell's acceptance comes from: per-request (vLLM's per-request spec-decode metrics, with
    # bootstrap intervals) or counters (/metrics deltas only, no interval); null without speculation.
    Column("acceptance_source", String),
    # Why the per-request sums disagree with the /metrics counter deltas (null: they agree, or no check ran).
    Column("acceptance_suspect", String),
    Column("acceptance_checked", Boolean),  # the cross-check ran (both sources present)
    # The /metrics counter deltas over the cell's window, kept beside the per-request sums they were checked
    # against (drafts/draft_tokens/accepted_tokens above are the sums when acceptance_source is per-request).
    Column("counter_drafts", Double),
    Column("counter_draft_tokens", Double),
    Column("counter_accepted_tokens", Double),
    Column("schedule", String),  # JSON [[start, end, K], ...]: num_speculative_tokens_per_batch_size, else null
    Column("synthetic_rates", String),  # JSON per-position rates of a synthetic-acceptance cost cell, else null
    Column("output_throughput", Double),
    Column("output_throughput_per_gpu", Double),
    Column("request_throughput", Double),
    *[Column(f"{p}_{lat}", Double) for lat in _LATENCIES for p in _PCTS],
    Column("mean_ttft_ms", Double),
    Column("mean_tpot_ms", Double),
    Column("mean_e2e_ms", Double),
    Column("written_at", DateTime),
    # v2: how the cell's numbers came to be — measured (NULL reads as measured), predicted (the factorized
    # plan's cost-model prediction, no requests behind it) or confirmed (measured to check a prediction) —
    # and the drafter checkpoint the server ran with (the matrix's draft_model), for the deploy command.
    Column("origin", String),
    Column("draft_model", String),
    # steady-state throughput (ingest/steady.py): over the time all `concurrency` slots were busy
    Column("steady_output_throughput", Double),
    Column("steady_output_throughput_per_gpu", Double),
    Column("steady_window_s", Double),
    Column("steady_requests", Integer),
    Column("steady_fallback", String),  # null: the steady window's own figure; else why the whole window stands in
    # v4: the dataset the cell was measured on (GSM8K, HumanEval …; null: not given) under its workload, and the
    # public source of an imported/published figure (null for runs measured here)
    Column("dataset", String),
    Column("source_url", String),
    # v5: the extra --speculative-config keys the server ran with beyond method, depth, drafter and schedule
    # (n-gram's prompt_lookup_max/min, a matrix's methods.X.extra), as a JSON object; null: none, or not known
    # (stored before v5, imported). The deploy command recommends these, so it is the config that was measured.
    Column("speculative_extra", String),
    # v7: the candidate's mode — fixed (one depth), schedule (num_speculative_tokens_per_batch_size; the schedule
    # column holds it) or adaptive (vLLM's enable_adaptive_verification up to `depth`, DSpark). Cells stored before
    # v7 are filled from their schedule column when the store is upgraded (ingest/store.py).
    Column("mode", String),
)

positions = Table(
    "positions", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("position", SmallInteger, primary_key=True, autoincrement=False),  # 1-based draft position
    Column("acceptance", Double, nullable=False),  # r_i = accepted at position i / drafts
    Column("ci_low", Double),  # 95 % bootstrap interval over requests (per-request acceptance only)
    Column("ci_high", Double),
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
    Column("spec_steps", Integer),
    # Lists (DuckDB/PostgreSQL arrays; JSON text where a database has no array type)
    Column("accepted_per_pos", ARRAY(BigInteger).with_variant(JSON(), "sqlite")),
    Column("step_accepted", ARRAY(Integer).with_variant(JSON(), "sqlite")),
    Column("step_drafted", ARRAY(Integer).with_variant(JSON(), "sqlite")),
    Column("ok", Boolean),
    Column("error", String),
)

# Bootstrap replicates of each cell's headline metrics (Poisson bootstrap over its requests),
# materialised when the cell lands so winners with confidence never rescan request rows.
BOOTSTRAP_METRICS: tuple[str, ...] = (
    "output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate", "acceptance_length",
    "steady_output_throughput",
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

# Requests of each cell counted into the bins of a TTFT × TPOT SLO grid when the cell lands (ingest/goodput.py):
# goodput under any SLO on the grid is a sum of bins, never a scan of request rows. Derived, so not exported.
cell_slo_hist = Table(
    "cell_slo_hist", metadata,
    Column("run_id", String, primary_key=True),
    Column("cell_id", String, primary_key=True),
    Column("ttft_bin", SmallInteger, primary_key=True, autoincrement=False),
    Column("tpot_bin", SmallInteger, primary_key=True, autoincrement=False),
    Column("requests", BigInteger, nullable=False),
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


# ---- production watch (ingest/watch/): cumulative counters as vLLM reports them, one row per (target, ts) ----
# Samples carry the segment and config their target had at that instant, so a relabel or config change
# keeps history right. Resets, gaps and windows are derived in analysis/production/, never stored.
watch_samples = Table(
    "watch_samples", metadata,
    Column("target", String, primary_key=True),
    Column("ts", DateTime, primary_key=True),  # UTC
    Column("source", String, nullable=False),  # metrics | prometheus
    Column("segment", String, nullable=False),
    Column("family", String),
    Column("method", String),
    Column("depth", Integer),
    Column("gpu", String),
    Column("gpu_count", Integer),
    Column("workload", String),
    Column("drafts", Double),
    Column("draft_tokens", Double),
    Column("accepted_tokens", Double),
    Column("generation_tokens", Double),
    Column("prompt_tokens", Double),
    Column("requests_ok", Double),
    Column("process_start_s", Double),
)

watch_positions = Table(
    "watch_positions", metadata,
    Column("target", String, primary_key=True),
    Column("ts", DateTime, primary_key=True),
    Column("position", SmallInteger, primary_key=True, autoincrement=False),  # 1-based draft position
    Column("accepted", Double, nullable=False),  # cumulative accepted tokens at this position
)

watch_histograms = Table(
    "watch_histograms", metadata,
    Column("target", String, primary_key=True),
    Column("ts", DateTime, primary_key=True),
    Column("metric", String, primary_key=True),  # ttft | tpot | e2e (seconds, vLLM's histograms)
    Column("le", Double, primary_key=True),  # bucket upper bound (inf for +Inf)
    Column("count", Double, nullable=False),  # cumulative
)

watch_events = Table(
    "watch_events", metadata,
    Column("target", String, primary_key=True),
    Column("ts", DateTime, primary_key=True),
    Column("kind", String, primary_key=True),  # error | config_change | relabel
    Column("detail", String),
)

# ---- request logs (ingest/requestlog/): per-request spec-decode metrics joined to request attributes ----
# vLLM's /metrics counters are per server and model name; a gateway's request log carries each response's
# ``metrics.speculative_decoding`` (``--per-request-spec-decode-metrics``) beside the request's labels (tenant,
# route, workload ...), so acceptance splits by any label inside one deployment. v5.
request_logs = Table(
    "request_logs", metadata,
    Column("log_id", String, primary_key=True),  # = file hash: the same file twice is one log
    Column("target", String, nullable=False),  # the deployment (server or fleet) the requests went to
    Column("source_path", String),
    Column("imported_at", DateTime),
    Column("family", String),
    Column("method", String),
    Column("gpu", String),
    Column("workload", String),  # the deployment's workload when a request has no ``workload`` label
    Column("requests", Integer),  # lines landed
    Column("skipped", Integer),  # lines without per-request spec-decode metrics (n > 1, errors, flag off)
)

request_log_rows = Table(
    "request_log_rows", metadata,
    Column("log_id", String, primary_key=True),
    Column("line", Integer, primary_key=True, autoincrement=False),  # 1-based line in the imported file
    Column("ts", DateTime, nullable=False),  # UTC
    Column("labels", String, nullable=False),  # JSON object {label: text}, keys sorted
    Column("model", String),  # the response's ``model``
    Column("depth", Integer, autoincrement=False),  # num_spec_tokens
    Column("prompt_tokens", Integer),
    Column("completion_tokens", Integer),
    Column("spec_steps", Integer),  # num_spec_steps (vLLM's drafts)
    Column("draft_tokens", Integer),  # num_draft_tokens
    Column("accepted_tokens", Integer),  # num_accepted_draft_tokens
    Column("acceptance_histogram", ARRAY(Integer).with_variant(JSON(), "sqlite")),  # [j] = steps accepting j
)

# ---- derived data (analysis/derived.py): what answers need, computed when data lands, never exported ----
# Each item carries the data stamp of the store it was computed from (analysis/derived_read.py: a fingerprint of the
# input tables' rows, taken in the same transaction) and the code version that computed it; a reader uses it
# only when both are current, else computes live. v6.
derived = Table(
    "derived", metadata,
    Column("name", String, primary_key=True),  # winners (the default --json document) | matrices
    Column("data_stamp", String, nullable=False),
    Column("code_version", Integer, nullable=False, autoincrement=False),
    Column("computed_at", DateTime),
    Column("body", String),  # winners: the JSON document as printed; NULL when there is none (no cells)
)

# The re-scoring matrices (analysis/rescore/matrix.py load_matrices, unfiltered) as rows: valid while the
# ``matrices`` row of ``derived`` is current. Samples are little-endian float64 arrays (numpy '<f8') as BLOBs.
derived_matrices = Table(
    "derived_matrices", metadata,
    Column("family", String, primary_key=True),
    Column("gpu", String, primary_key=True),
    Column("replicates", Integer),
    Column("models", String),  # JSON {model: cells}
    Column("tensor_parallel_size", Integer),
    Column("draft_models", String),  # JSON {method: drafter}
    Column("speculative_extras", String),  # JSON {method: {key: value}}
)

derived_matrix_cells = Table(
    "derived_matrix_cells", metadata,
    Column("family", String, primary_key=True),
    Column("gpu", String, primary_key=True),
    Column("method", String, primary_key=True),
    Column("depth", Integer, primary_key=True, autoincrement=False),
    Column("workload", String, primary_key=True),
    Column("concurrency", Integer, primary_key=True, autoincrement=False),
    Column("in_mean", Double),
    Column("tau", Double),
    Column("backend", String),
    Column("cell_id", String),
    Column("provenance", String),
    *[Column(a, BLOB) for a in ("ttft", "tpot", "out", "thr_ratio", "p99_ratio")],
)

ORIGINS: tuple[str, ...] = ("measured", "predicted", "confirmed")  # cells.origin (runner/factorized)


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


DDL_MODULE = Path(__file__).with_name("ddl.py")


def render_ddl_module() -> str:
    """The source of ``ingest/ddl.py``: what the store needs at run time, compiled from the tables above."""
    lines = [
        '"""GENERATED by ``python -m ingest.schema`` from ingest/schema.py — do not edit; regenerate after a schema',
        "change (tests/ingest/test_store.py fails while this is stale).",
        "",
        "The store's DDL (DuckDB dialect), column lists and version as plain data, so opening the store never imports",
        'SQLAlchemy."""',
        "",
        f"SCHEMA_VERSION = {SCHEMA_VERSION}",
        "",
        "COLUMNS: dict[str, tuple[str, ...]] = {",
    ]
    for table in metadata.tables.values():
        lines.append(f"    {table.name!r}: (")
        lines += [f"        {c!r}," for c in column_names(table)]
        lines.append("    ),")
    lines += ["}", "", "# Column types as DuckDB spells them: what a store from before a column existed gets added.",
              "COLUMN_TYPES: dict[str, dict[str, str]] = {"]
    from duckdb_engine import Dialect

    dialect = Dialect()
    for table in metadata.tables.values():
        lines.append(f"    {table.name!r}: {{")
        lines += [f"        {c.name!r}: {c.type.compile(dialect=dialect)!r}," for c in table.columns]
        lines.append("    },")
    lines += ["}", "", "DDL: tuple[str, ...] = ("]
    for statement in ddl_statements():  # one source line per DDL line (implicit concatenation)
        parts = statement.splitlines(keepends=True)
        lines += ["    (", *[f"        {part!r}" for part in parts], "    ),"]
    lines += [")", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    DDL_MODULE.write_text(render_ddl_module(), encoding="utf-8")
    print(f"wrote {DDL_MODULE}")
