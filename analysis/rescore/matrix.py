"""The measured matrix as re-scoring sees it: per-request (TTFT, TPOT) samples of every cell.

Owns reading the store for re-scoring (read-only, bound parameters only). For each family × GPU, a
cell (method, depth, workload, concurrency) becomes a :class:`CellSamples`: its successful requests'
TTFT and TPOT (TPOT derived from e2e when missing), their output and input lengths, its acceptance
length τ, and its bootstrap replicates of output throughput and p99 e2e as ratios to the point value
(so a prediction built from the cell can carry the cell's own sampling noise). A cell stored without
per-request rows (an import, a published figure) falls back to one sample of its mean TTFT/TPOT, and its
replicate ratios come from the stated run-to-run noise of point figures (exp(N(0, σ)), σ =
``analysis.winners.POINT_NOISE_PCT``, seeded by the cell id; docs/metrics.md), as in ``analysis winners``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import polars as pl

from analysis import frames
from analysis.winners import POINT_NOISE_PCT, point_noise_replicates
from ingest.sql import ArrowStream

Key = tuple[str, int, str, int]  # method, depth, workload, concurrency
# The cells columns a matrix is built from (the rest of frames.cells is not read here).
_ROW_COLUMNS = ("family", "gpu", "model", "method", "depth", "workload", "concurrency", "acceptance_length",
                "backend", "cell_id", "gpu_count", "draft_model", "speculative_extra", "mean_ttft_ms", "mean_tpot_ms",
                "n_requests")
REPLICATED = ("output_throughput", "p99_e2e_ms")  # the replicates a cell carries, as ratios to its point value


@dataclass(slots=True)
class CellSamples:
    method: str
    depth: int
    workload: str
    concurrency: int
    ttft: np.ndarray  # ms per request
    tpot: np.ndarray  # ms per output token after the first
    out: np.ndarray  # output tokens per request
    in_mean: float
    tau: float | None  # acceptance length (1 + accepted / drafts); None for the baseline
    thr_ratio: np.ndarray  # bootstrap replicate / point of output_throughput (NaN: no replicates)
    p99_ratio: np.ndarray
    backend: str
    cell_id: str
    provenance: str = "measured"  # measured | model:depth | model:none | model:acceptance

    def scaled(self, tpot_factor: float, provenance: str, depth: int | None = None,
               method: str | None = None) -> CellSamples:
        """A model-filled cell: this cell's samples with TPOT scaled (the acceptance/cost model's ratio)."""
        return replace(self, tpot=self.tpot * tpot_factor, provenance=provenance,
                       depth=self.depth if depth is None else depth,
                       method=self.method if method is None else method)


@dataclass(slots=True)
class Matrix:
    """Every usable cell of one family × GPU."""

    family: str
    gpu: str
    cells: dict[Key, CellSamples] = field(default_factory=dict)
    replicates: int = 0
    models: dict[str, int] = field(default_factory=dict)  # concrete model name -> cells
    tensor_parallel_size: int = 1  # GPUs per server in the cells (the deploy command's TP)
    draft_models: dict[str, str] = field(default_factory=dict)  # method -> drafter the cells ran with
    # method -> the other --speculative-config keys its cells ran with (cells.speculative_extra)
    speculative_extras: dict[str, dict] = field(default_factory=dict)

    @property
    def model(self) -> str:
        """The family's model most cells were measured on (what ``vllm serve`` should load)."""
        return max(self.models.items(), key=lambda kv: (kv[1], kv[0]))[0] if self.models else self.family

    @property
    def concurrencies(self) -> list[int]:
        return sorted({k[3] for k in self.cells})

    @property
    def workloads(self) -> list[str]:
        return sorted({k[2] for k in self.cells})

    def choices(self) -> list[tuple[str, int]]:
        return sorted({(k[0], k[1]) for k in self.cells})

    @property
    def backends(self) -> list[str]:
        return sorted({c.backend for c in self.cells.values()})


def _ratios(reps: np.ndarray, point: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return reps / point[:, None]


def load_matrices(con: duckdb.DuckDBPyConnection, families: tuple[str, ...] = (), gpus: tuple[str, ...] = ()
                  ) -> dict[tuple[str, str], Matrix]:
    """(family, gpu) → Matrix for every family × GPU in the store matching the filters."""
    cells = frames.cells(con, frames.Filters(families=families, gpus=gpus))
    # Re-scoring interpolates along load: a figure whose load is not stated (published point figures) has no
    # place on that axis and no latency samples, so it is not part of a re-scoring matrix.
    cells = cells.filter(pl.col("concurrency").is_not_null())
    # A matrix cell is keyed (method, depth, workload, load): a measured schedule or adaptive-verification cell
    # of the same depth would take a fixed cell's place. Re-scoring builds its schedules from fixed cells
    # (analysis.schedule); measured modes are the winners' candidates, not yet re-scoring's (docs/rescoring.md).
    cells = cells.filter(pl.col("mode") == "fixed")
    if cells.height == 0:
        return {}
    reps = frames.replicates_of(con, cells, REPLICATED)
    ids = cells["cell_id"].to_list()
    for metric, r in reps.items():
        point = cells[metric].fill_null(np.nan).to_numpy().astype(float)
        # a point figure (no replicate): the stated run-to-run noise, as the winner rule gives it
        filled, _ = point_noise_replicates(point, r, ids, POINT_NOISE_PCT)
        reps[metric] = _ratios(filled, point)
    n_rep = max(r.shape[1] for r in reps.values())
    samples = _requests(con, cells)
    # frames.cells does not carry a cell's output-token total; only cells without requests need it
    totals = _output_tokens(con, cells) if any(got is None for got in samples) else {}
    no_reps = np.full(n_rep, np.nan)
    out: dict[tuple[str, str], Matrix] = {}
    for i, row in enumerate(cells.select(_ROW_COLUMNS).iter_rows(named=True)):
        got = samples[i]
        if got is None:  # no per-request rows: one sample from the cell's means
            if row["mean_ttft_ms"] is None or row["mean_tpot_ms"] is None:
                continue
            mean_out = (totals.get(i) or 0) / max(1, row["n_requests"] or 1) or 256.0
            got = (np.array([row["mean_ttft_ms"]]), np.array([row["mean_tpot_ms"]]), np.array([mean_out]),
                   float("nan"))
        ttft, tpot, outs, in_mean = got
        cell = CellSamples(
            method=row["method"], depth=int(row["depth"]), workload=row["workload"],
            concurrency=int(row["concurrency"]), ttft=ttft, tpot=tpot, out=outs, in_mean=in_mean,
            tau=row["acceptance_length"] if row["method"] != "none" else None,
            thr_ratio=reps["output_throughput"][i] if reps["output_throughput"].size else no_reps.copy(),
            p99_ratio=reps["p99_e2e_ms"][i] if reps["p99_e2e_ms"].size else no_reps.copy(),
            backend=row["backend"], cell_id=row["cell_id"],
        )
        mk = (row["family"], row["gpu"])
        m = out.get(mk)
        if m is None:
            m = out[mk] = Matrix(row["family"], row["gpu"], replicates=n_rep)
        m.models[row["model"]] = m.models.get(row["model"], 0) + 1
        m.tensor_parallel_size = max(m.tensor_parallel_size, int(row["gpu_count"] or 1))
        if row["draft_model"]:
            m.draft_models.setdefault(row["method"], row["draft_model"])
        if row["speculative_extra"]:
            m.speculative_extras.setdefault(row["method"], _extra(row["speculative_extra"]))
        key = (cell.method, cell.depth, cell.workload, cell.concurrency)
        # Two models of one family may hold the same key: the better-sampled cell wins.
        if key not in m.cells or m.cells[key].ttft.size < cell.ttft.size:
            m.cells[key] = cell
    return out


def _extra(text: str) -> dict:
    """A cell's stored speculative_extra JSON object; anything else (damaged, not an object) reads as none."""
    import json

    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _output_tokens(con: duckdb.DuckDBPyConnection, cells: pl.DataFrame) -> dict[int, int | None]:
    """Row of ``cells`` → its stored output-token total."""
    con.register("_rescore_keys", ArrowStream(cells.select("run_id", "cell_id").with_row_index("row")))
    try:
        return dict(con.execute("SELECT k.row, c.output_tokens FROM _rescore_keys k JOIN cells c "
                                "USING (run_id, cell_id)").fetchall())
    finally:
        con.unregister("_rescore_keys")


# Per-request samples of the keyed cells (``row``: the cell's row in the keys). TPOT is derived from e2e when
# missing; a request whose TPOT cannot be known is left out. Not ordered here: DuckDB's ORDER BY over the
# payload costs about twice the whole fetch, numpy orders the (row, request index) keys in a fraction of it.
_REQUESTS_SQL = """
    SELECT row, request_index, ttft_ms, tpot_ms, out_tokens, in_tokens FROM (
        SELECT k.row, coalesce(q.request_index, 2147483647) AS request_index, q.ttft_ms,
               coalesce(q.output_tokens, 0)::DOUBLE AS out_tokens,
               coalesce(q.input_tokens::DOUBLE, 'NaN'::DOUBLE) AS in_tokens,
               coalesce(q.tpot_ms, CASE WHEN q.output_tokens > 1
                        THEN (q.e2e_ms - q.ttft_ms) / (q.output_tokens - 1) END) AS tpot_ms
        FROM requests q JOIN _rescore_keys k USING (run_id, cell_id)
        WHERE coalesce(q.ok, true) AND q.ttft_ms IS NOT NULL AND q.e2e_ms IS NOT NULL
    )
    WHERE isfinite(tpot_ms)
"""


def _requests(con: duckdb.DuckDBPyConnection, cells: pl.DataFrame) -> list[tuple | None]:
    """Per row of ``cells``: (ttft, tpot, output tokens, mean input) of its successful requests, or None when
    the cell has no usable per-request rows. The arrays are views into one fetch, in request-index order."""
    con.register("_rescore_keys", ArrowStream(cells.select("run_id", "cell_id").with_row_index("row")))
    try:
        req = con.execute(_REQUESTS_SQL).fetchnumpy()
    finally:
        con.unregister("_rescore_keys")
    out: list[tuple | None] = [None] * cells.height
    if req["row"].size == 0:
        return out
    # Each cell one contiguous slice, its requests in request-index order (the scan's own order is not defined).
    order = np.argsort(req["row"].astype(np.int64) << 32 | (req["request_index"].astype(np.int64) + 2**31),
                       kind="stable")
    rows = req["row"][order]
    ttft, tpot, outs, ins = (req[c][order] for c in ("ttft_ms", "tpot_ms", "out_tokens", "in_tokens"))  # DOUBLE
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    ends = np.r_[starts[1:], rows.size]
    # Mean input per cell over the known lengths (NaN when none is known). Token counts are integers, so the
    # segment sums are exact in any summation order: the same floats as a per-cell nanmean.
    known = np.isfinite(ins)
    n_known = np.add.reduceat(known.astype(np.int64), starts)
    total = np.add.reduceat(np.where(known, ins, 0.0), starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        in_mean = np.where(n_known > 0, total / n_known, np.nan)
    for r, a, b, m in zip(rows[starts].tolist(), starts.tolist(), ends.tolist(), in_mean.tolist(), strict=True):
        out[r] = (ttft[a:b], tpot[a:b], outs[a:b], m)
    return out
