"""Goodput under any SLO of a fixed grid, without rescanning request rows: the per-cell SLO histogram.

Goodput is the requests meeting an SLO (``ok``, TTFT ≤ t, TPOT ≤ p; a missing TPOT counts as 0, as in
:func:`analysis.frames.goodput`) per second of the cell's window. Scanning every request row for it costs
0.3–0.7 s per rerun at 10–30 M rows, so when a cell lands its requests are counted once into the bins of
:data:`TTFT_GRID_MS` × :data:`TPOT_GRID_MS` (table ``cell_slo_hist``): bin ``k`` of a grid holds the requests
whose value is ≤ grid[k] and above grid[k-1]; bin ``len(grid)`` holds those above the last grid value, and
failed requests or requests without a TTFT (they never meet an SLO). The requests meeting an SLO on the grid
are then the sum of the bins at or below its two grid indices — exact, not interpolated. SLOs off the grid
are answered from the request rows, as before.

One SQL text (:data:`LAND_SQL`, :data:`BACKFILL_SQL`) bins requests from any source with the same columns: the rows a
landing cell brings (registered as a view) and, once, the rows of a store written before the table existed
(:func:`backfill`).
"""

from __future__ import annotations

import duckdb

TTFT_GRID_MS: tuple[float, ...] = (50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000)
TPOT_GRID_MS: tuple[float, ...] = (5, 10, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200)
PARAMS: list[float] = [*map(float, TTFT_GRID_MS), *map(float, TPOT_GRID_MS)]


def _bins(expr: str, size: int) -> str:
    return "CASE " + " ".join(f"WHEN {expr} <= ? THEN {k}" for k in range(size)) + f" ELSE {size} END"


_BEYOND = len(TTFT_GRID_MS)
_TTFT_BIN = f"CASE WHEN ok AND ttft_ms IS NOT NULL THEN {_bins('ttft_ms', _BEYOND)} ELSE {_BEYOND} END"
_TPOT_BIN = _bins("coalesce(tpot_ms, 0)", len(TPOT_GRID_MS))
_HISTOGRAM = ("INSERT INTO cell_slo_hist SELECT run_id, cell_id, " + _TTFT_BIN + " AS ttft_bin, " + _TPOT_BIN
              + " AS tpot_bin, count(*) AS requests FROM ")
VIEW = "_incoming_slo_requests"
# The one binning statement, over the landing rows (a registered view) or over the stored requests of cells
# without bins. Built only from the fixed text above: every grid value is a bound parameter (PARAMS).
LAND_SQL = _HISTOGRAM + VIEW + " GROUP BY ALL"
CLEAR_SQL = ("DELETE FROM cell_slo_hist WHERE (run_id, cell_id) IN (SELECT DISTINCT run_id, cell_id FROM "
             + VIEW + ")")
BACKFILL_SQL = (_HISTOGRAM + "requests WHERE (run_id, cell_id) NOT IN "
                "(SELECT DISTINCT run_id, cell_id FROM cell_slo_hist) GROUP BY ALL")


def grid_bins(ttft_ms: float, tpot_ms: float) -> tuple[int, int] | None:
    """The two grid indices of an SLO, or None when either value is off the grid."""
    try:
        return TTFT_GRID_MS.index(ttft_ms), TPOT_GRID_MS.index(tpot_ms)
    except ValueError:
        return None


def land(con: duckdb.DuckDBPyConnection, requests: object) -> None:
    """Bin the requests of cells being landed (inside the caller's transaction). ``requests``: anything
    DuckDB can register (an Arrow stream of run_id, cell_id, ok, ttft_ms, tpot_ms)."""
    con.register(VIEW, requests)
    try:
        # the landing cells are new: bins left under their keys are orphans of rows deleted by hand
        con.execute(CLEAR_SQL)
        con.execute(LAND_SQL, PARAMS)
    finally:
        con.unregister(VIEW)


def backfill(con: duckdb.DuckDBPyConnection) -> None:
    """Bin the stored requests of every cell that has none in ``cell_slo_hist`` (a store from before it)."""
    con.execute(BACKFILL_SQL, PARAMS)
