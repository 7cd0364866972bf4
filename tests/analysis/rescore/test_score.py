"""The scorer's vectorised parts (analysis.rescore.score) against straightforward one-bucket-at-a-time code."""

from __future__ import annotations

import numpy as np
import pytest

from analysis.rescore import fill
from analysis.rescore import score as S
from analysis.rescore.matrix import CellSamples
from analysis.rescore.trace import bucket_bounds


def _reference_rows(out: np.ndarray, lb: int) -> np.ndarray:
    """Which samples stand for bucket ``lb``, written as the model states it, one bucket at a time."""
    lo, hi = bucket_bounds(lb)
    inside = (out >= lo) & (out < hi)
    if inside.sum() >= S.MIN_SAMPLES_PER_BUCKET:
        return np.flatnonzero(inside)
    if out.size <= S.MIN_SAMPLES_PER_BUCKET:
        return np.arange(out.size)
    dist = np.abs(np.log(np.maximum(out, 1.0)) - np.log(np.sqrt(lo * hi)))
    return np.sort(np.argsort(dist, kind="stable")[:S.MIN_SAMPLES_PER_BUCKET])


def _arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [
        np.rint(rng.lognormal(5, 1.2, 300)),  # integer lengths: many ties at the 30th nearest
        rng.lognormal(5, 1.2, 250),
        np.full(80, 128.0),  # one length: every far bucket ties everywhere
        np.rint(rng.uniform(1, 40, 31)),  # just above the minimum
        np.rint(rng.uniform(1, 4000, 12)),  # below it: all samples everywhere
        np.array([37.0]),  # an import's single mean sample
        np.r_[np.full(40, 2.0), np.full(40, 8.0)],  # equidistant on both sides of bucket 4's centre
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selection_equals_one_bucket_at_a_time(seed):
    for out in _arrays(seed):
        sel = S._select(out[None, :], 40)[0]
        assert sel.lbs == 40
        for lb in range(40):
            got = sel.idx[sel.starts[lb]:sel.starts[lb] + sel.counts[lb]]
            np.testing.assert_array_equal(got, _reference_rows(out, lb), err_msg=f"lb={lb} n={out.size}")


def test_many_cells_at_once_equal_one_at_a_time():
    rng = np.random.default_rng(5)
    outs = [np.rint(rng.lognormal(5, 1.2, n)) for n in (300, 300, 300, 31, 31, 12, 1)] + _arrays(1)
    cells = [CellSamples("mtp", 3, "chat", 8, ttft=o, tpot=o, out=o, in_mean=1.0, tau=2.0, thr_ratio=o[:0],
                         p99_ratio=o[:0], backend="sim", cell_id=str(i)) for i, o in enumerate(outs)]
    cache = S.ScoreCache()
    S.prime(cache, [*cells, None, cells[0]], 23, max_elements=30_000)  # small chunks: several per size
    for out in outs:
        got, alone = cache.selections[id(out)][0], S._select(out[None, :], 24)[0]
        for a, b in ((got.idx, alone.idx), (got.starts, alone.starts), (got.counts, alone.counts)):
            np.testing.assert_array_equal(a, b)


def test_selection_grows_to_cover_later_buckets_and_keeps_the_earlier_ones():
    out = _arrays(0)[0]
    cache = S.ScoreCache()
    small = S._selection(out, 5, cache)
    big = S._selection(out, 30, cache)
    assert small.lbs >= 5 and big.lbs >= 30
    for lb in range(5):
        np.testing.assert_array_equal(small.idx[small.starts[lb]:small.starts[lb] + small.counts[lb]],
                                      big.idx[big.starts[lb]:big.starts[lb] + big.counts[lb]])
    assert S._selection(out, 10, cache) is big


def test_bucket_means_are_the_selected_samples_means():
    rng = np.random.default_rng(3)
    out = np.rint(rng.lognormal(5, 1, 200))
    cell = CellSamples("mtp", 3, "chat", 8, ttft=rng.uniform(50, 500, 200), tpot=rng.uniform(5, 40, 200), out=out,
                       in_mean=900.0, tau=2.5, thr_ratio=np.ones(4), p99_ratio=np.ones(4), backend="sim",
                       cell_id="c")
    tab = S._table(cell, 25, S.ScoreCache())
    for lb in range(25):
        rows = _reference_rows(out, lb)
        assert tab.m_ttft[lb] == pytest.approx(cell.ttft[rows].mean(), rel=1e-12)
        assert tab.m_tpot[lb] == pytest.approx(cell.tpot[rows].mean(), rel=1e-12)


def test_segments_concatenate_ranges():
    starts, counts = np.array([5, 0, 9]), np.array([2, 3, 1])
    np.testing.assert_array_equal(S._segments(starts, counts), [5, 6, 0, 1, 2, 9])


def _cell(rng, method, depth, wl, c, n=120):
    out = np.rint(rng.lognormal(5, 1, n))
    return CellSamples(method, depth, wl, c, ttft=rng.uniform(50, 400, n) * (1 + c / 16),
                       tpot=rng.uniform(5, 30, n) * (1 + c / 32) / (1 + depth / 4), out=out, in_mean=800.0,
                       tau=1 + depth / 2 if method != "none" else None, thr_ratio=rng.uniform(0.95, 1.05, 8),
                       p99_ratio=rng.uniform(0.95, 1.05, 8), backend="sim", cell_id=f"{method}{depth}{wl}{c}")


def _shard(rng, n_rows=60, grid=(1, 4, 16)):
    t = rng.integers(0, 6, n_rows)
    wi = rng.integers(0, 2, n_rows)
    lb = rng.integers(2, 22, n_rows)
    n = rng.integers(1, 50, n_rows).astype(float)
    out = n * np.array([np.sqrt(np.prod(bucket_bounds(int(b)))) for b in lb])
    inp = n * rng.uniform(200, 3000, n_rows)
    n_t = np.bincount(t, weights=n, minlength=6)
    return S.ShardInput(t=t, wi=wi, lb=lb, n=n, out=out, inp=inp, n_t=n_t, rate=n_t / 60.0 / 2, fixed_c=None,
                        grid=list(grid))


def test_a_shared_cache_changes_no_prediction():
    """One cache over many candidates and shards (as re-scoring uses it) equals a fresh cache per call."""
    rng = np.random.default_rng(7)
    grid = [1, 4, 16, 64]
    cands_all = {(m, d): [[_cell(rng, m, d, wl, c) for c in grid] for wl in ("chat", "code")]
             for m, d in [("none", 0), ("mtp", 2), ("mtp", 3), ("eagle3", 4)]}
    shards = [_shard(rng, grid=(1, 4, 16)), _shard(rng, 40, grid=(4, 16, 64))]  # shards may use different loads
    dep = fill.deployment("Qwen", "MI300X")
    assert dep is not None
    kw = {"workloads": ["chat", "code"], "dep": dep, "slo": (600.0, 25.0), "n_rep": 8}
    shared = S.ScoreCache()
    for si in shards:
        on = [grid.index(c) for c in si.grid]
        cands = {k: [[per_wl[g] for g in on] for per_wl in cells] for k, cells in cands_all.items()}
        ref = S.score(cands[("mtp", 3)], si, method="mtp", depth=3, cache=shared, **kw)
        assert ref.load is not None
        for (m, d), cells in cands.items():
            a = S.score(cells, si, method=m, depth=d, load=ref.load, cache=shared, **kw)
            b = S.score(cells, si, method=m, depth=d, load=ref.load, **kw)
            assert (a.output_throughput, a.p99_e2e_ms, a.goodput) == (b.output_throughput, b.p99_e2e_ms, b.goodput)
            np.testing.assert_array_equal(a.reps["output_throughput"], b.reps["output_throughput"])
            assert a.provenance == b.provenance and a.mean_concurrency == b.mean_concurrency


def test_p99_and_goodput_are_those_of_every_request_sample_pair():
    """Without a cost model and at a fixed concurrency on the grid, the prediction is plain arithmetic over
    the (bucket, sample) pairs: each bucket's requests take every selected sample's e2e with equal weight."""
    rng = np.random.default_rng(11)
    cells = [[_cell(rng, "mtp", 3, "chat", 4)]]
    si = _shard(rng, 30, grid=(4,))
    si = S.ShardInput(t=si.t, wi=np.zeros_like(si.wi), lb=si.lb, n=si.n, out=si.out, inp=si.inp, n_t=si.n_t,
                      rate=None, fixed_c=4.0, grid=[4])
    slo = (500.0, 20.0)
    p = S.score(cells, si, method="mtp", depth=3, workloads=["chat"], dep=None, slo=slo, n_rep=0)
    cell = cells[0][0]
    vals, wts, meeting, server_ms = [], [], 0.0, 0.0
    for lb in np.unique(si.lb):
        rows = si.lb == lb
        n, lm1 = si.n[rows].sum(), (np.maximum(si.out[rows] / si.n[rows] - 1, 0) * si.n[rows]).sum() / si.n[rows].sum()
        sel = _reference_rows(cell.out, int(lb))
        e2e = cell.ttft[sel] + lm1 * cell.tpot[sel]
        vals += list(e2e)
        wts += [n / sel.size] * sel.size
        meeting += n * np.mean((cell.ttft[sel] <= slo[0]) & (cell.tpot[sel] <= slo[1]))
        for r in np.flatnonzero(rows):
            L = si.out[r] / si.n[r]
            server_ms += si.n[r] * (cell.ttft[sel].mean() + max(L - 1, 0) * cell.tpot[sel].mean()) / 4.0
    order = np.argsort(vals, kind="stable")
    cum = np.cumsum(np.array(wts)[order])
    assert p.p99_e2e_ms == pytest.approx(np.array(vals)[order][np.searchsorted(cum, 0.99 * cum[-1])], rel=1e-12)
    assert p.output_throughput == pytest.approx(si.out.sum() / (server_ms / 1e3), rel=1e-9)
    assert p.goodput == pytest.approx(meeting / (server_ms / 1e3), rel=1e-9)


def test_candidates_scored_together_equal_each_alone(monkeypatch):
    """A batch stacks the same arithmetic: each candidate's prediction is the one it gets scored alone, also
    when the batch is cut into pieces by its size."""
    rng = np.random.default_rng(13)
    grid = [1, 4, 16]
    cands = [S.Candidate([[_cell(rng, m, d, wl, c) for c in grid] for wl in ("chat", "code")], m, d)
             for m, d in [("none", 0), ("mtp", 2), ("mtp", 3), ("eagle3", 4)]]
    cands.append(S.Candidate(cands[2].cells, "mtp", [3, 3, 2]))  # a depth schedule per batch size
    si = _shard(rng)
    kw = {"workloads": ["chat", "code"], "dep": fill.deployment("Qwen", "MI300X"), "slo": (600.0, 25.0), "n_rep": 8}
    load = S.score(cands[2].cells, si, method="mtp", depth=3, **kw).load
    alone = [S.score(c.cells, si, method=c.method, depth=c.depth, load=load, **kw) for c in cands]
    for limit in (S.MAX_BATCH_SAMPLES, 2_000):  # one batch; a piece every two candidates or so
        monkeypatch.setattr(S, "MAX_BATCH_SAMPLES", limit)
        together = S.score_many(cands, si, load=load, **kw)
        for a, b in zip(together, alone, strict=True):
            assert (a.output_throughput, a.p99_e2e_ms, a.goodput, a.server_s) == \
                (b.output_throughput, b.p99_e2e_ms, b.goodput, b.server_s)
            for k in b.reps:
                np.testing.assert_array_equal(a.reps[k], b.reps[k])
            assert a.provenance == b.provenance
    assert len({p.output_throughput for p in alone}) == len(alone)  # the candidates do differ
    with pytest.raises(ValueError, match="exactly one candidate"):
        S.score_many(cands[:2], si, **kw)
