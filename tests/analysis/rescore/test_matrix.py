"""load_matrices against a straightforward per-cell reading of the store (one query per cell, plain Python).

The loader reads every cell's requests and replicates in one pass each; the reference here asks the store cell by
cell and computes TPOT, the filter and the mean input length row by row, so the two share no code. Checked on the
default store and on a copy where some cells lost their per-request rows (as imports without them), some their
replicates, and requests carry the awkward values (failed, no TPOT, one output token, unknown input length).
A cell without any replicate gets the stated run-to-run noise of point figures (docs/metrics.md), recomputed here
from its definition: point × exp(N(0, 3 %)) per replicate, seeded from the cell id.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from analysis import frames
from analysis.rescore.matrix import load_matrices
from ingest import store
from ingest.sql import frame as query


def _reference_samples(con, run_id: str, cell_id: str) -> tuple[list, list, list, float] | None:
    req = query(con, "SELECT * FROM requests WHERE run_id = ? AND cell_id = ? ORDER BY request_index",
                [run_id, cell_id])
    ttft, tpot, outs, ins = [], [], [], []
    for r in req.iter_rows(named=True):
        if r["ok"] is False or r["ttft_ms"] is None or r["e2e_ms"] is None:
            continue
        t = r["tpot_ms"]
        if t is None and r["output_tokens"] is not None and r["output_tokens"] > 1:
            t = (r["e2e_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1)
        if t is None or not math.isfinite(t):
            continue
        ttft.append(r["ttft_ms"])
        tpot.append(t)
        outs.append(float(r["output_tokens"] or 0))
        if r["input_tokens"] is not None:
            ins.append(r["input_tokens"])
    if not ttft:
        return None
    return ttft, tpot, outs, (sum(ins) / len(ins) if ins else math.nan)


def _reference_ratios(con, row: dict, metric: str, n_rep: int) -> np.ndarray:
    got = con.execute(f"SELECT replicate, {metric} FROM cell_bootstrap WHERE run_id = ? AND cell_id = ?",
                      [row["run_id"], row["cell_id"]]).fetchall()
    out = np.full(n_rep, np.nan)
    point = np.float64(row[metric] if row[metric] is not None else math.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        for rep, v in got:
            out[rep] = np.float64(v if v is not None else math.nan) / point
        if math.isfinite(point) and not np.isfinite(out).any():  # a point figure: the stated 3 % noise
            seed = int(hashlib.sha256(f"point-noise:{row['cell_id']}".encode()).hexdigest()[:12], 16)
            out = point * np.exp(np.random.default_rng(seed).normal(0.0, 0.03, n_rep)) / point
    return out


def _same(a: np.ndarray, b) -> bool:
    b = np.asarray(b, dtype=float)
    return a.dtype == np.float64 and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def _check(db: Path, every: int, also: set[str] = frozenset()) -> dict:
    """Compare the loader with the reference on every ``every``-th cell and on the cells in ``also``."""
    with store.session(db, read_only=True) as con:
        got = load_matrices(con)
        cells = frames.cells(con)
        # a figure whose load is not stated (the default store's published cells) is in no re-scoring matrix
        unstated = {r["cell_id"] for r in cells.iter_rows(named=True) if r["concurrency"] is None}
        assert not any(c.cell_id in unstated for m in got.values() for c in m.cells.values())
        rows = [r for r in cells.iter_rows(named=True) if r["concurrency"] is not None]
        n_rep = con.execute("SELECT coalesce(max(replicate) + 1, 0) FROM cell_bootstrap b JOIN cells c "
                            "USING (run_id, cell_id) WHERE c.status = 'ok'").fetchall()[0][0]
        checked = {"cells": 0, "fallback": 0, "skipped": 0}
        # Which cells are usable and in what order each matrix meets its keys.
        order: dict[tuple[str, str], list] = {}
        for i, row in enumerate(rows):
            if i % every and row["cell_id"] not in also:
                continue
            ref = _reference_samples(con, row["run_id"], row["cell_id"])
            m = got.get((row["family"], row["gpu"]))
            key = (row["method"], int(row["depth"]), row["workload"], int(row["concurrency"]))
            if ref is None and (row["mean_ttft_ms"] is None or row["mean_tpot_ms"] is None):
                assert m is None or key not in m.cells or m.cells[key].cell_id != row["cell_id"]
                checked["skipped"] += 1
                continue
            cell = m.cells[key]
            if cell.cell_id != row["cell_id"]:  # another model of the family holds the key with more samples
                assert ref is None or cell.ttft.size >= len(ref[0])
                continue
            if ref is None:  # no per-request rows: one sample of the means
                total = con.execute("SELECT output_tokens FROM cells WHERE run_id = ? AND cell_id = ?",
                                    [row["run_id"], row["cell_id"]]).fetchall()[0][0]
                ref = ([row["mean_ttft_ms"]], [row["mean_tpot_ms"]],
                       [((total or 0) / max(1, row["n_requests"] or 1)) or 256.0], math.nan)
                checked["fallback"] += 1
            assert _same(cell.ttft, ref[0]) and _same(cell.tpot, ref[1]) and _same(cell.out, ref[2]), row["cell_id"]
            assert cell.in_mean == ref[3] or (math.isnan(cell.in_mean) and math.isnan(ref[3])), row["cell_id"]
            assert _same(cell.thr_ratio, _reference_ratios(con, row, "output_throughput", n_rep))
            assert _same(cell.p99_ratio, _reference_ratios(con, row, "p99_e2e_ms", n_rep))
            assert cell.tau == (row["acceptance_length"] if row["method"] != "none" else None)
            assert (cell.backend, cell.method, cell.workload) == (row["backend"], row["method"], row["workload"])
            checked["cells"] += 1
        for row in rows:
            keys = order.setdefault((row["family"], row["gpu"]), [])
            key = (row["method"], int(row["depth"]), row["workload"], int(row["concurrency"]))
            m = got.get((row["family"], row["gpu"]))
            if m is not None and key in m.cells and key not in keys:
                keys.append(key)
        for fg, m in got.items():
            assert list(m.cells) == order[fg]  # the matrix meets its cells in the store's cell order
            assert m.replicates == n_rep
    return checked


def test_default_store_matches_a_per_cell_reading(default_db: Path) -> None:
    checked = _check(default_db, every=41)
    assert checked["cells"] >= 50 and checked["fallback"] == 0


@pytest.fixture(scope="module")
def awkward_store(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """The default store with cells stripped of requests / replicates and requests with awkward values."""
    path = tmp_path_factory.mktemp("matrix") / "awkward.duckdb"
    shutil.copy(default_db, path)
    with store.session(path) as con:
        ids = [r[0] for r in con.execute("SELECT cell_id FROM cells WHERE status = 'ok' ORDER BY cell_id").fetchall()]
        no_requests, no_reps, awkward = ids[:12], ids[12:20], ids[20:40]
        no_means, no_inputs = ids[40:42], ids[42:44]
        con.execute("DELETE FROM requests WHERE cell_id IN (SELECT unnest(?))", [no_requests + no_means])
        con.execute("UPDATE cells SET mean_ttft_ms = NULL WHERE cell_id IN (SELECT unnest(?))", [no_means])
        con.execute("UPDATE cells SET output_tokens = NULL WHERE cell_id = ?", [no_requests[0]])
        con.execute("DELETE FROM cell_bootstrap WHERE cell_id IN (SELECT unnest(?))", [no_reps])
        con.execute("UPDATE requests SET input_tokens = NULL WHERE cell_id IN (SELECT unnest(?))", [no_inputs])
        for sql in ("UPDATE requests SET ok = false WHERE request_index % 7 = 0",
                    "UPDATE requests SET tpot_ms = NULL WHERE request_index % 5 = 1",
                    "UPDATE requests SET tpot_ms = NULL, output_tokens = 1 WHERE request_index % 11 = 2",
                    "UPDATE requests SET input_tokens = NULL WHERE request_index % 3 = 0",
                    "UPDATE requests SET ttft_ms = NULL WHERE request_index % 13 = 4",
                    "UPDATE requests SET ok = NULL WHERE request_index % 17 = 5",
                    "UPDATE requests SET tpot_ms = 'inf'::DOUBLE WHERE request_index % 19 = 6"):
            con.execute(sql.replace("WHERE", "WHERE cell_id IN (SELECT unnest(?)) AND"), [awkward])
    return path, set(ids[:44])


def test_awkward_store_matches_a_per_cell_reading(awkward_store: tuple[Path, set[str]]) -> None:
    path, touched = awkward_store
    checked = _check(path, every=97, also=touched)
    assert checked["fallback"] >= 10 and checked["skipped"] == 2 and checked["cells"] >= 40
    with store.session(path, read_only=True) as con:  # the cells stripped of replicates carry the stated noise
        got = load_matrices(con)
    noised = [c for m in got.values() for c in m.cells.values() if c.cell_id in touched
              and np.isfinite(c.thr_ratio).all() and abs(np.log(c.thr_ratio).std() - 0.03) < 0.008]
    assert len(noised) >= 5
