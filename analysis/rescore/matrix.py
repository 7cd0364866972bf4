"""The measured matrix as re-scoring sees it: per-request (TTFT, TPOT) samples of every cell.

Owns reading the store for re-scoring (read-only, bound parameters only). For each family × GPU, a
cell (method, depth, workload, concurrency) becomes a :class:`CellSamples`: its successful requests'
TTFT and TPOT (TPOT derived from e2e when missing), their output and input lengths, its acceptance
length τ, and its bootstrap replicates of output throughput and p99 e2e as ratios to the point value
(so a prediction built from the cell can carry the cell's own sampling noise). A cell stored without
per-request rows (an import) falls back to one sample of its mean TTFT/TPOT and has no replicates,
which the winner rule then cannot call clearly better than anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import duckdb
import numpy as np
import polars as pl

from analysis import frames
from ingest.sql import ArrowStream
from ingest.sql import frame as query

Key = tuple[str, int, str, int]  # method, depth, workload, concurrency


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
    if cells.height == 0:
        return {}
    n_rep = 0
    reps: dict[str, np.ndarray] = {}
    for metric in ("output_throughput", "p99_e2e_ms"):
        r = frames.replicates(con, cells, metric)
        n_rep = max(n_rep, r.shape[1] if r.ndim == 2 else 0)
        reps[metric] = _ratios(r, cells[metric].fill_null(np.nan).to_numpy().astype(float)) if r.size else r
    samples = _requests(con, cells)
    out: dict[tuple[str, str], Matrix] = {}
    for i, row in enumerate(cells.iter_rows(named=True)):
        got = samples.get(row["cell_id"])
        if got is None:  # no per-request rows: one sample from the cell's means
            if row["mean_ttft_ms"] is None or row["mean_tpot_ms"] is None:
                continue
            mean_out = (row["output_tokens"] or 0) / max(1, row["n_requests"] or 1) or 256.0
            got = (np.array([row["mean_ttft_ms"]]), np.array([row["mean_tpot_ms"]]), np.array([mean_out]),
                   float("nan"))
        ttft, tpot, outs, in_mean = got
        nan = np.full(n_rep, np.nan)
        cell = CellSamples(
            method=row["method"], depth=int(row["depth"]), workload=row["workload"],
            concurrency=int(row["concurrency"]), ttft=ttft, tpot=tpot, out=outs, in_mean=in_mean,
            tau=row["acceptance_length"] if row["method"] != "none" else None,
            thr_ratio=reps["output_throughput"][i] if reps["output_throughput"].size else nan,
            p99_ratio=reps["p99_e2e_ms"][i] if reps["p99_e2e_ms"].size else nan,
            backend=row["backend"], cell_id=row["cell_id"],
        )
        m = out.setdefault((row["family"], row["gpu"]), Matrix(row["family"], row["gpu"], replicates=n_rep))
        m.models[row["model"]] = m.models.get(row["model"], 0) + 1
        m.tensor_parallel_size = max(m.tensor_parallel_size, int(row.get("gpu_count") or 1))
        if row.get("draft_model"):
            m.draft_models.setdefault(row["method"], row["draft_model"])
        key = (cell.method, cell.depth, cell.workload, cell.concurrency)
        # Two models of one family may hold the same key: the better-sampled cell wins.
        if key not in m.cells or m.cells[key].ttft.size < cell.ttft.size:
            m.cells[key] = cell
    return out


def _requests(con: duckdb.DuckDBPyConnection, cells: pl.DataFrame) -> dict[str, tuple]:
    """cell_id → (ttft, tpot, output tokens, mean input) of its successful requests."""
    con.register("_rescore_keys", ArrowStream(cells.select("run_id", "cell_id")))
    try:
        req = query(con, """
            SELECT q.cell_id, q.ttft_ms, q.input_tokens, q.output_tokens,
                   coalesce(q.tpot_ms, CASE WHEN q.output_tokens > 1
                            THEN (q.e2e_ms - q.ttft_ms) / (q.output_tokens - 1) END) AS tpot_ms
            FROM requests q JOIN _rescore_keys k USING (run_id, cell_id)
            WHERE coalesce(q.ok, true) AND q.ttft_ms IS NOT NULL AND q.e2e_ms IS NOT NULL
        """)
    finally:
        con.unregister("_rescore_keys")
    req = req.filter(pl.col("tpot_ms").is_not_null() & pl.col("tpot_ms").is_finite()).sort("cell_id")
    if req.height == 0:
        return {}
    # Whole columns to numpy once, then slice per cell (cells are contiguous after the sort).
    ids = req["cell_id"].to_numpy()
    ttft, tpot = req["ttft_ms"].to_numpy().astype(float), req["tpot_ms"].to_numpy().astype(float)
    outs = req["output_tokens"].fill_null(0).to_numpy().astype(float)
    ins = req["input_tokens"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    ends = np.r_[starts[1:], ids.size]
    out = {}
    for a, b in zip(starts, ends, strict=True):
        seg = ins[a:b]
        out[str(ids[a])] = (ttft[a:b], tpot[a:b], outs[a:b],
                            float(np.nanmean(seg)) if np.isfinite(seg).any() else float("nan"))
    return out
