"""Steady-state throughput (ingest/steady.py): the window, its tokens, the fallbacks, the replicates, the bulk
path agreeing with the per-cell path, and the schema-1 store migration."""

from __future__ import annotations

import heapq

import duckdb
import numpy as np
import polars as pl
import pytest

from ingest import cellstats, schema, steady, store
from ingest.records import CellKey


def _frame(start, e2e_s, out, ttft_s=None, ok=None) -> pl.DataFrame:
    n = len(start)
    return pl.DataFrame({
        "request_index": np.arange(n, dtype=np.int32), "input_tokens": np.full(n, 10, np.int32),
        "output_tokens": np.asarray(out, dtype=np.int32),
        "ttft_ms": np.asarray(ttft_s if ttft_s is not None else np.zeros(n), dtype=float) * 1e3,
        "tpot_ms": np.full(n, np.nan), "e2e_ms": np.asarray(e2e_s, dtype=float) * 1e3,
        "start_s": np.asarray(start, dtype=float),
        "drafted_tokens": np.full(n, np.nan), "accepted_tokens": np.full(n, np.nan),
        "ok": np.asarray(ok if ok is not None else np.ones(n, bool)),
    })


def _closed_loop(e2e_s: np.ndarray, slots: int) -> np.ndarray:
    free = [0.0] * slots
    start = np.empty(e2e_s.size)
    for i, d in enumerate(e2e_s):
        start[i] = heapq.heappop(free)
        heapq.heappush(free, start[i] + d)
    return start


def test_window_and_tokens_by_hand():
    # two slots: A on one for 10 s; B, C back to back on the other, then D, sent at 8 s, runs past A's finish.
    # Steady window = [0, 10] (at 10 s A finishes and nothing is left to send). Tokens (first token at the send,
    # the rest spread over the decode): A 11, B 5, C 5, D 1 + 6·(2/6) = 3 → 24 tokens / 10 s.
    f = _frame([0, 0, 4, 8], [10, 4, 4, 6], [11, 5, 5, 7])
    w = steady.measure(f["start_s"].to_numpy(), f["e2e_ms"].to_numpy(), f["ttft_ms"].to_numpy(),
                       f["output_tokens"].to_numpy(), np.ones(4, bool), 2)
    assert w.window_s == pytest.approx(10.0) and w.whole_s == pytest.approx(14.0)
    np.testing.assert_allclose(w.tokens_in, [11, 5, 5, 3])
    np.testing.assert_allclose(w.seconds_in, [10, 4, 4, 2])
    assert w.requests_in == 3  # D spent 2 of its 6 s in the window
    assert w.fallback == f"3 requests in the steady window (fewer than {steady.MIN_REQUESTS})"


def test_first_token_counts_only_inside_the_window():
    # D's first token at 11 s (after the window closes at 10 s): D adds nothing
    f = _frame([0, 0, 4, 8], [10, 4, 4, 6], [11, 5, 5, 7], ttft_s=[0, 0, 0, 3])
    w = steady.measure(f["start_s"].to_numpy(), f["e2e_ms"].to_numpy(), f["ttft_ms"].to_numpy(),
                       f["output_tokens"].to_numpy(), np.ones(4, bool), 2)
    assert w.tokens_in[3] == pytest.approx(0.0) and w.seconds_in[3] == pytest.approx(2.0)


def test_drain_is_excluded_and_the_figure_does_not_depend_on_the_request_count():
    rng = np.random.default_rng(3)
    figures = {}
    for n in (100, 800):
        e2e = rng.lognormal(1.0, 0.5, n)
        out = np.round(e2e * 40).astype(int) + 1  # every request at 40 tok/s after its first token
        start = _closed_loop(e2e, 16)
        vals, w = steady.values(_frame(start, e2e, out), concurrency=16, gpu_count=2, whole_window=None)
        whole = out.sum() / (start + e2e).max()
        figures[n] = (vals["steady_output_throughput"], whole)
        assert vals["steady_fallback"] is None
        assert vals["steady_output_throughput"] == pytest.approx(16 * 40, rel=0.02)  # 16 slots × 40 tok/s
        assert vals["steady_output_throughput_per_gpu"] == pytest.approx(vals["steady_output_throughput"] / 2)
        assert w.requests_in > (0.75 if n == 100 else 0.95) * n
    # the whole window is diluted by the drain, the more so the fewer requests; the steady figure is not
    assert figures[100][1] < 0.9 * figures[100][0] and figures[100][1] < 0.95 * figures[800][1] < figures[800][0]


def test_concurrency_one_is_the_whole_window():
    e2e = np.full(50, 2.0)
    start = np.arange(50) * 2.0
    vals, _ = steady.values(_frame(start, e2e, np.full(50, 81)), concurrency=1, gpu_count=1, whole_window=40.5)
    assert vals["steady_fallback"] is None
    assert vals["steady_output_throughput"] == pytest.approx(81 * 50 / 100.0)


@pytest.mark.parametrize(("case", "reason"), [
    ("no_starts", "no per-request start times"),
    ("never_full", "concurrency 8 never reached"),
    ("few", "requests in the steady window (fewer than"),
    ("short", "of the whole window (less than"),
])
def test_fallback_to_the_whole_window_is_flagged(case: str, reason: str):
    c = 8
    if case == "no_starts":
        f = _frame(np.zeros(40), np.ones(40), np.full(40, 10)).with_columns(pl.lit(None, pl.Float64).alias("start_s"))
    elif case == "never_full":
        f = _frame(np.arange(40) * 1.0, np.ones(40), np.full(40, 10))  # one at a time on 8 slots
    elif case == "few":
        e2e = np.ones(20)
        f = _frame(_closed_loop(e2e, c), e2e, np.full(20, 10))
    else:  # one 100 s request, 7 slots of short ones for 20 s: the window is 20 % of the whole
        e2e = np.concatenate([[100.0], np.ones(140)])
        f = _frame(_closed_loop(e2e, c), e2e, np.full(141, 10))
    vals, w = steady.values(f, concurrency=c, gpu_count=1, whole_window=123.0)
    assert reason in vals["steady_fallback"]
    assert vals["steady_output_throughput"] == 123.0
    whole_reps = np.linspace(100, 140, 200)
    np.testing.assert_array_equal(steady.replicates(w.fallback, 123.0, 120.0, whole_reps), whole_reps)


def test_exact_bootstrap_of_the_window_is_centred_seeded_and_reproducible():
    rng = np.random.default_rng(5)
    e2e = rng.lognormal(1.0, 0.5, 600)
    out = np.round(e2e * rng.uniform(20, 60, 600)).astype(int) + 1
    f = _frame(_closed_loop(e2e, 32), e2e, out)
    vals, w = steady.values(f, concurrency=32, gpu_count=1, whole_window=None)
    point = vals["steady_output_throughput"]
    a = steady.exact_replicates(w, point, seed=7)
    b = steady.exact_replicates(w, point, seed=7)
    c = steady.exact_replicates(w, point, seed=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    lo, hi = np.percentile(a, [2.5, 97.5])
    assert lo < point < hi and (hi - lo) / point < 0.2
    large = steady.exact_replicates(w, point, seed=7, exact=False)  # the normal limit agrees
    assert np.std(large) == pytest.approx(np.std(a), rel=0.3)


@pytest.mark.parametrize(("method", "depth", "workload", "concurrency"), [
    ("none", 0, "code", 64), ("eagle3", 3, "code", 64), ("dflash", 6, "reasoning", 64), ("mtp", 2, "chat", 16),
    ("dspark", 4, "reasoning", 16), ("ngram", 3, "code", 64)])
def test_rescaled_replicates_match_the_windows_own_bootstrap(method, depth, workload, concurrency):
    """The stored replicates (whole-window ones rescaled to the steady point) have the spread of the bootstrap of
    the window's own ratio, on simulated cells: their SDs agree within 20 % (200 replicates: ~5 % SD noise)."""
    from runner.simulate import simulate_cell

    key = CellKey(method, depth, "Gemma", "google/gemma-4-31B-it", workload, "MI355X", concurrency)
    res = simulate_cell(key, 6 * concurrency if concurrency > 32 else 200,
                        max_output_tokens=2048 if workload == "reasoning" else 512)
    seed = cellstats.seed_for(key.cell_id)
    frames = store.cell_frames("r", key, res.requests, window_s=res.window_s, gpu_count=res.gpu_count,
                               counters=res.counters)
    stored = frames["cell_bootstrap"]["steady_output_throughput"].to_numpy()
    point = frames["cells"]["steady_output_throughput"][0]
    _, w = steady.values(res.requests, concurrency=concurrency, gpu_count=res.gpu_count, whole_window=None)
    own = steady.exact_replicates(w, point, seed=seed)
    assert np.std(stored) == pytest.approx(np.std(own), rel=0.2)
    assert np.median(stored) == pytest.approx(point, rel=0.01) and np.median(own) == pytest.approx(point, rel=0.01)


def _sim_like_requests(n: int, slots: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    e2e = rng.lognormal(1.0, 0.4, n)
    out = np.round(e2e * 30).astype(int) + 1
    ok = np.ones(n, bool)
    ok[::29] = False
    return _frame(_closed_loop(e2e, slots), e2e, out, ttft_s=e2e * 0.05, ok=ok)


def test_bulk_path_equals_per_cell_path():
    keys = [CellKey("eagle3", d, "Qwen", "q", "code", "MI300X", 16) for d in (2, 3)] + [
        CellKey("none", 0, "Qwen", "q", "code", "MI300X", 1)]
    cells, reqs, per_cell = [], [], {}
    for i, k in enumerate(keys):
        r = _sim_like_requests(150 + 40 * i, k.concurrency, i)
        frames = store.cell_frames("run", k, r, window_s=float((r["start_s"] + r["e2e_ms"] / 1e3).max()),
                                   gpu_count=2)
        cells.append(frames["cells"])
        reqs.append(frames["requests"])
        per_cell[k.cell_id] = (frames["cells"], frames["cell_bootstrap"])
    cells_f = pl.concat(cells, how="diagonal_relaxed")
    mixed = pl.concat(reqs).sample(fraction=1.0, shuffle=True, seed=1)
    boot = store.bootstrap_frames(cells_f, mixed)
    recomputed = store.steady_columns(cells_f.drop(list(steady.COLUMNS)), mixed)
    for cid, (cell, want) in per_cell.items():
        assert cell["steady_fallback"][0] is None
        got = boot.filter(pl.col("cell_id") == cid).sort("replicate")
        np.testing.assert_array_equal(got["steady_output_throughput"].to_numpy(),
                                      want["steady_output_throughput"].to_numpy())
        row = recomputed.filter(pl.col("cell_id") == cid)
        for col in steady.COLUMNS:
            assert row[col][0] == pytest.approx(cell[col][0]) if cell[col][0] is not None else row[col][0] is None


def test_a_stored_cell_carries_both_figures(tmp_path):
    k = CellKey("eagle3", 3, "Qwen", "q", "code", "MI300X", 16)
    r = _sim_like_requests(300, 16, 2)
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_cell(con, "run", k, r, window_s=float((r["start_s"] + r["e2e_ms"] / 1e3).max()), gpu_count=2)
        row = con.execute("SELECT output_throughput, steady_output_throughput, steady_output_throughput_per_gpu, "
                          "steady_window_s, steady_requests, steady_fallback FROM cells").fetchall()[0]
        reps = con.execute("SELECT steady_output_throughput FROM cell_bootstrap ORDER BY replicate").fetchall()
    whole, st, per_gpu, window, n_in, fallback = row
    assert fallback is None and st > whole and per_gpu == pytest.approx(st / 2) and window > 0 and n_in > 250
    assert len(reps) == cellstats.BOOTSTRAP_REPLICATES and all(np.isfinite(v) for (v,) in reps)


def test_a_schema_1_store_is_migrated_and_flagged(tmp_path):
    path = tmp_path / "old.duckdb"
    k = CellKey("none", 0, "Qwen", "q", "code", "MI300X", 16)
    r = _sim_like_requests(100, 16, 4)
    with store.session(path) as con:
        store.write_cell(con, "run", k, r, window_s=30.0, gpu_count=1)
    con = duckdb.connect(str(path))  # turn it back into a version-1 store
    added = {"cells": ("steady_output_throughput", "steady_output_throughput_per_gpu", "steady_window_s",
                       "steady_requests", "steady_fallback"), "cell_bootstrap": ("steady_output_throughput",)}
    for table, cols in added.items():
        for col in cols:
            con.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    store._ENSURED.clear()
    with store.connect(path, read_only=True) as con:  # a reader upgrades it once, then reads
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()[0][0]
        whole, st, fallback = con.execute(
            "SELECT output_throughput, steady_output_throughput, steady_fallback FROM cells").fetchall()[0]
        reps = con.execute("SELECT count(*) FROM cell_bootstrap WHERE steady_output_throughput = output_throughput"
                           ).fetchall()[0][0]
    assert version == str(schema.SCHEMA_VERSION)
    assert st == whole and fallback == store.STEADY_BEFORE and reps == cellstats.BOOTSTRAP_REPLICATES
