"""The bootstrap replicates stored per cell: the fast Poisson sampler, the windowed p99, the large-n scheme
(validated against the exact bootstrap), and the bulk path agreeing with the per-cell path."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from ingest import cellstats, store
from ingest.records import CellKey


def _cols(n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = np.round(rng.lognormal(5.0, 0.9, n))
    ttft = rng.lognormal(4.0, 1.2, n)
    tpot = rng.lognormal(2.5, 0.3, n)
    e2e = ttft + tpot * np.maximum(tokens - 1, 0)
    drafted = tokens * 3
    accepted = rng.binomial(drafted.astype(int), 0.6).astype(float)
    return {"output_tokens": tokens, "e2e_ms": e2e, "ttft_ms": ttft, "tpot_ms": tpot, "drafted_tokens": drafted,
            "accepted_tokens": accepted}


def test_poisson1_has_the_poisson_one_distribution():
    w = cellstats.poisson1(np.random.default_rng(3), 2_000_000)
    assert w.dtype == np.uint8
    for k in range(5):
        p = math.exp(-1) / math.factorial(k)
        se = math.sqrt(p * (1 - p) / w.size)
        assert abs((w == k).mean() - p) < 5 * se, k
    assert abs(w.mean() - 1) < 0.005 and abs(w.var() - 1) < 0.01


@pytest.mark.parametrize("tail_sds", [cellstats.TAIL_SDS, -3.0])  # -3: most replicates take the fallback
def test_windowed_quantile_equals_the_full_cumulative_sum(monkeypatch, tail_sds):
    monkeypatch.setattr(cellstats, "TAIL_SDS", tail_sds)
    rng = np.random.default_rng(11)
    for n in (1, 3, 40, 200, 1500):
        vals = np.round(rng.lognormal(0, 1, n), 1)  # rounded: ties
        w = cellstats.poisson1(rng, (n, 300))
        got = cellstats._exact_quantile(vals, w, w.sum(axis=0, dtype=np.int64), 0.99)
        order = np.argsort(vals, kind="stable")
        cum = np.cumsum(w[order], axis=0).astype(float)  # the definition, summed over every request
        idx = np.minimum((cum < 0.99 * cum[-1]).sum(axis=0), n - 1)
        want = vals[order][idx]
        want[cum[-1] == 0] = np.nan
        np.testing.assert_array_equal(got, want)


def test_large_n_quantile_window_is_only_a_shortcut(monkeypatch):
    vals = np.round(np.random.default_rng(4).lognormal(0, 1, 6000), 2)
    fast = cellstats._tail_quantile(vals, np.random.default_rng(1), 500, 0.99)
    monkeypatch.setattr(cellstats, "TAIL_SDS", -1000.0)  # a one-value window: (nearly) every draw looks below it
    full = cellstats._tail_quantile(vals, np.random.default_rng(1), 500, 0.99)
    np.testing.assert_array_equal(fast, full)


def test_large_n_scheme_matches_the_exact_bootstrap():
    n, reps = cellstats.EXACT_MAX_N + 400, 1500
    cols = _cols(n, 5)
    exact = cellstats.bootstrap_arrays(cols, 1000.0, depth=3, seed=1, replicates=reps, exact=True)
    fast = cellstats.bootstrap_arrays(cols, 1000.0, depth=3, seed=2, replicates=reps)
    for m in ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate",
              "acceptance_length"):
        e, f = exact[m], fast[m]
        assert np.isfinite(f).all(), m
        sd = e.std()
        assert abs(f.mean() - e.mean()) < 0.25 * sd, m  # same centre
        assert 0.85 < f.std() / sd < 1.15, m  # same spread (Monte-Carlo error ≈ 2 %)
        lo_e, hi_e = np.percentile(e, [2.5, 97.5])
        lo_f, hi_f = np.percentile(f, [2.5, 97.5])
        assert max(abs(lo_f - lo_e), abs(hi_f - hi_e)) < 0.25 * (hi_e - lo_e), m


def test_replicates_are_reproducible_and_seeded():
    cols = _cols(300, 9)
    a = cellstats.bootstrap_arrays(cols, 10.0, depth=2, seed=7)
    b = cellstats.bootstrap_arrays(cols, 10.0, depth=2, seed=7)
    c = cellstats.bootstrap_arrays(cols, 10.0, depth=2, seed=8)
    assert all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
    assert not np.array_equal(a["output_throughput"], c["output_throughput"])


def _requests(n: int, seed: int) -> pl.DataFrame:
    c = _cols(n, seed)
    ok = np.ones(n, dtype=bool)
    ok[::17] = False
    return pl.DataFrame({"request_index": np.arange(n, dtype=np.int32), "input_tokens": np.full(n, 100, np.int32),
                         "output_tokens": c["output_tokens"].astype(np.int32), "ttft_ms": c["ttft_ms"],
                         "tpot_ms": c["tpot_ms"], "e2e_ms": c["e2e_ms"], "start_s": np.linspace(0, 10, n),
                         "drafted_tokens": c["drafted_tokens"].astype(np.int64),
                         "accepted_tokens": c["accepted_tokens"].astype(np.int64), "ok": ok})


def test_bulk_path_equals_per_cell_path_even_with_scattered_rows():
    keys = [CellKey("eagle3", d, "Qwen", "q", "code", "MI300X", 16) for d in (2, 3)] + [
        CellKey("none", 0, "Qwen", "q", "code", "MI300X", 16)]
    cells, reqs, per_cell = [], [], {}
    for i, k in enumerate(keys):
        r = _requests(150 + 40 * i, i)
        frames = store.cell_frames("run", k, r, window_s=10.0, gpu_count=1)
        cells.append(frames["cells"])
        reqs.append(frames["requests"])
        per_cell[k.cell_id] = frames["cell_bootstrap"]
    cells_f = pl.concat(cells, how="diagonal_relaxed")
    mixed = pl.concat(reqs).sample(fraction=1.0, shuffle=True, seed=1)  # rows of the cells interleaved
    bulk = store.bootstrap_frames(cells_f, mixed)
    assert bulk.height == 200 * len(keys)
    for cid, want in per_cell.items():
        got = bulk.filter(pl.col("cell_id") == cid).sort("replicate")
        for col in cellstats.METRIC_KEYS:
            np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy())
