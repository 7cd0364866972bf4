"""Read-only access to the store for analysis: filtered cells, their bootstrap replicates, requests.

Every value reaches SQL as a bound parameter; every identifier comes from an allow-list
(:mod:`analysis.metrics`). When several runs hold the same cell, the most recently written successful
row wins, unless runs are chosen explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np
import polars as pl

from analysis.metrics import CELL_COLUMNS, DIMENSION_COLUMNS, get_metric
from ingest import ddl
from ingest import goodput as slo_grid
from ingest.sql import ArrowStream, one
from ingest.sql import frame as query

# A cell's mode; cells stored before schema 7 and not yet upgraded read as their schedule column says.
MODE_SQL = "coalesce(c.mode, CASE WHEN c.schedule IS NOT NULL THEN 'schedule' ELSE 'fixed' END)"


@dataclass(frozen=True, slots=True)
class Filters:
    gpus: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    # None in it selects the cells whose load is not stated (NULL); without None they are left out
    concurrency: tuple[int | None, ...] = ()
    depth_min: int = 0
    depth_max: int = 64
    runs: tuple[str, ...] = ()
    backends: tuple[str, ...] = field(default=())
    models: tuple[str, ...] = ()
    datasets: tuple[str, ...] = ()
    # candidate modes (fixed | schedule | adaptive); empty: all. Views along the depth axis read fixed cells only:
    # a schedule's or adaptive cell's depth is a cap, not the depth it ran at.
    modes: tuple[str, ...] = ()


def _where(f: Filters) -> tuple[str, list[object]]:
    clauses = ["c.status = 'ok'", "(c.method = 'none' OR c.depth BETWEEN ? AND ?)"]
    params: list[object] = [f.depth_min, f.depth_max]
    for column, values in (("c.gpu", f.gpus), ("c.family", f.families), ("c.workload", f.workloads),
                           ("c.method", f.methods), ("c.run_id", f.runs), ("r.backend", f.backends),
                           ("c.model", f.models), ("c.dataset", f.datasets), (MODE_SQL, f.modes)):
        if values:
            clauses.append(f"{column} IN (SELECT unnest(?))")
            params.append(list(values))
    if f.concurrency:  # `IN` never matches NULL: "load not stated" is asked for by None, explicitly
        stated = [c for c in f.concurrency if c is not None]
        either = ["c.concurrency IN (SELECT unnest(?))"] if stated else []
        params += [stated] if stated else []
        if None in f.concurrency:
            either.append("c.concurrency IS NULL")
        clauses.append("(" + " OR ".join(either) + ")")
    return " AND ".join(clauses), params


def cells(con: duckdb.DuckDBPyConnection, f: Filters | None = None) -> pl.DataFrame:
    """One row per cell (latest successful run per cell id): dimensions, metrics, run provenance."""
    where, params = _where(f or Filters())
    cols = ", ".join(f"c.{c}" for c in (*DIMENSION_COLUMNS, *CELL_COLUMNS))
    text = f"""
        SELECT c.run_id, c.cell_id, {cols}, c.n_requests, c.n_failed, c.gpu_count, r.backend,
               r.engine_version, r.source AS run_source,
               c.acceptance_source, c.acceptance_suspect, c.schedule, c.synthetic_rates,
               {MODE_SQL} AS mode,
               coalesce(c.origin, 'measured') AS origin, c.draft_model, c.speculative_extra, c.source_url
        FROM cells c JOIN runs r USING (run_id)
        WHERE {where}
        QUALIFY row_number() OVER (PARTITION BY c.cell_id ORDER BY c.written_at DESC, c.run_id DESC) = 1
        ORDER BY c.gpu, c.family, c.model, c.workload, c.dataset NULLS FIRST, c.concurrency NULLS FIRST, c.method,
                 c.depth
    """
    return query(con, text, params)


def replicates(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, metric: str) -> np.ndarray:
    """Bootstrap replicates of ``metric`` — a metric name or a replicated column such as
    ``steady_output_throughput`` (what the output-throughput winner rule reads, ``Metric.value_column``) — as a
    (cells × replicates) matrix aligned with ``keys`` rows. A metric name reads its own column."""
    return replicates_of(con, keys, (metric,))[metric]


def replicates_of(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, metrics: tuple[str, ...]
                  ) -> dict[str, np.ndarray]:
    """:func:`replicates` of several columns in one read: metric → (cells × replicates), NaN where missing."""
    for metric in metrics:
        if metric not in ddl.COLUMNS["cell_bootstrap"][3:]:
            m = get_metric(metric)
            raise ValueError(f"{m.name} has no stored replicates")
    if keys.height == 0:
        return {metric: np.zeros((0, 0)) for metric in metrics}
    # Straight to numpy (no frame in between): one replicate table is cells × replicates rows.
    values = ", ".join(f"coalesce(b.{metric}::DOUBLE, 'NaN'::DOUBLE) AS v{i}" for i, metric in enumerate(metrics))
    con.register("_keys", ArrowStream(keys.select("run_id", "cell_id").with_row_index("row")))
    try:
        got = con.execute(f"""
            SELECT k.row, b.replicate, {values}
            FROM _keys k JOIN cell_bootstrap b ON b.run_id = k.run_id AND b.cell_id = k.cell_id
        """).fetchnumpy()
    finally:
        con.unregister("_keys")
    rows, reps = got["row"], got["replicate"]
    n_rep = int(reps.max()) + 1 if reps.size else 0
    out = {}
    for i, metric in enumerate(metrics):
        out[metric] = np.full((keys.height, n_rep), np.nan)
        if reps.size:
            out[metric][rows, reps] = got[f"v{i}"]
    return out


def model_factors(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, metric: str) -> np.ndarray:
    """Model-draw factors of ``metric`` as a (cells × draws) matrix aligned with ``keys`` rows: 1.0 for cells
    without draws (measured cells, no-spec cells); (n × 0) when the store has no model draws at all."""
    m = get_metric(metric)
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if keys.height == 0 or not m.bootstrapped or "model_draws" not in present:
        return np.zeros((keys.height, 0))
    con.register("_keys", ArrowStream(keys.select("run_id", "cell_id").with_row_index("row")))
    try:
        frame = query(con, f"""
            SELECT k.row, d.replicate, d.{m.name} AS v
            FROM _keys k JOIN model_draws d ON d.run_id = k.run_id AND d.cell_id = k.cell_id
        """)
    finally:
        con.unregister("_keys")
    if frame.height == 0:
        return np.zeros((keys.height, 0))
    out = np.ones((keys.height, int(frame["replicate"].max()) + 1))
    out[frame["row"].to_numpy(), frame["replicate"].to_numpy()] = frame["v"].fill_null(1.0).to_numpy()
    return out


def sampling_replicates(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, metric: str) -> np.ndarray:
    """:func:`replicates` with the model draws taken out (sampling noise only): for judging simulated cells
    against each other inside one simulated world, where the simulator's error against reality is shared."""
    reps = replicates(con, keys, metric)
    model = model_factors(con, keys, "output_throughput" if metric.endswith("output_throughput") else metric)
    if model.size and reps.size:
        with np.errstate(invalid="ignore", divide="ignore"):
            reps = reps / model[:, : reps.shape[1]]
    return reps


def requests(con: duckdb.DuckDBPyConnection, run_id: str, cell_id: str) -> pl.DataFrame:
    return query(con,
        "SELECT * FROM requests WHERE run_id = ? AND cell_id = ? ORDER BY request_index", [run_id, cell_id]
    )


def positions(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame) -> pl.DataFrame:
    if keys.height == 0:
        return pl.DataFrame(schema={"run_id": pl.String, "cell_id": pl.String, "position": pl.Int16,
                                    "acceptance": pl.Float64})
    con.register("_keys", ArrowStream(keys.select("run_id", "cell_id")))
    try:
        return query(con, "SELECT p.* FROM positions p JOIN _keys k USING (run_id, cell_id) "
                           "ORDER BY p.cell_id, p.position")
    finally:
        con.unregister("_keys")


def goodput(con: duckdb.DuckDBPyConnection, keys: pl.DataFrame, ttft_ms: float, tpot_ms: float) -> pl.DataFrame:
    """Per cell: requests meeting the SLO, requests, window → goodput = meeting / window.

    An SLO on the grid of ``ingest/goodput.py`` is answered from the per-cell histogram (no request row read);
    other SLOs, and cells with requests but no histogram, from the request rows."""
    con.register("_keys", ArrowStream(keys.select("run_id", "cell_id")))
    try:
        bins = slo_grid.grid_bins(ttft_ms, tpot_ms)
        if bins is None or not _has_table(con, "cell_slo_hist"):
            return _goodput_scan(con, ttft_ms, tpot_ms)
        hist = query(con, """
            SELECT h.run_id, h.cell_id, sum(h.requests) FILTER (WHERE h.ttft_bin <= ? AND h.tpot_bin <= ?) AS meeting,
                   sum(h.requests) AS n, any_value(c.window_s) AS window_s
            FROM cell_slo_hist h JOIN _keys k USING (run_id, cell_id)
                 JOIN cells c ON c.run_id = h.run_id AND c.cell_id = h.cell_id
            GROUP BY h.run_id, h.cell_id
        """, list(bins)).with_columns(pl.col("meeting").fill_null(0).cast(pl.Int64), pl.col("n").cast(pl.Int64))
        missing = query(con, """
            SELECT k.run_id, k.cell_id FROM _keys k JOIN cells c USING (run_id, cell_id)
            WHERE coalesce(c.n_requests, 0) > 0
              AND NOT EXISTS (SELECT 1 FROM cell_slo_hist h WHERE h.run_id = k.run_id AND h.cell_id = k.cell_id)
        """)
        if missing.height == 0:
            return hist
        con.unregister("_keys")
        con.register("_keys", ArrowStream(missing))  # only those cells are scanned
        return pl.concat([hist, _goodput_scan(con, ttft_ms, tpot_ms)], how="vertical_relaxed")
    finally:
        con.unregister("_keys")


def _goodput_scan(con: duckdb.DuckDBPyConnection, ttft_ms: float, tpot_ms: float) -> pl.DataFrame:
    """From the request rows of the cells in the registered ``_keys`` view."""
    return query(con, """
        SELECT q.run_id, q.cell_id,
               count(*) FILTER (WHERE q.ok AND q.ttft_ms <= ? AND coalesce(q.tpot_ms, 0) <= ?) AS meeting,
               count(*) AS n, any_value(c.window_s) AS window_s
        FROM requests q JOIN _keys k USING (run_id, cell_id)
             JOIN cells c ON c.run_id = q.run_id AND c.cell_id = q.cell_id
        GROUP BY q.run_id, q.cell_id
    """, [ttft_ms, tpot_ms]).with_columns(pl.col("meeting").cast(pl.Int64), pl.col("n").cast(pl.Int64))


def _has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(one(con, "SELECT 1 FROM information_schema.tables WHERE table_name = ?", [name]))


def distinct_values(con: duckdb.DuckDBPyConnection) -> dict[str, list]:
    """The values each dimension takes in the store (for filter widgets and validation). Nulls are left out (a
    cell without a dataset, a load not stated); ``load_not_stated`` says whether any cell's load is not stated."""
    out: dict[str, list] = {}
    for col in ("gpu", "family", "model", "workload", "dataset", "method", "concurrency", "depth"):
        out[col] = query(con, f"SELECT DISTINCT {col} FROM cells WHERE status = 'ok' AND {col} IS NOT NULL "
                              f"ORDER BY {col}")[col].to_list()
    out["load_not_stated"] = [bool(one(con, "SELECT count(*) FROM cells WHERE status = 'ok' "
                                            "AND concurrency IS NULL")[0])]
    return out


def runs(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return query(con, """
        SELECT r.*, count(c.cell_id) AS cells,
               count(c.cell_id) FILTER (WHERE c.status = 'failed') AS cells_failed,
               coalesce(sum(c.n_requests), 0) AS requests
        FROM runs r LEFT JOIN cells c USING (run_id)
        GROUP BY ALL ORDER BY r.started_at DESC
    """)
