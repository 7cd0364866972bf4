"""Scoring candidates (method, depth) on one shard of a trace: throughput, p99 e2e, goodput.

Owns the per-request model, applied to buckets of requests (analysis.rescore.trace), never to single
requests in Python, and to a shard's candidates side by side (:func:`score_many`: one array operation
per step for all of them, each with the numbers it gets scored alone):

* a request of ``L`` output tokens and ``I`` input tokens at concurrency ``c`` takes
  e2e = TTFT·s_T(I) + (L − 1)·TPOT·s_P, with (TTFT, TPOT) the measured per-request samples of the
  cell (workload, c) — of the requests in the same output-length bucket when the cell has ≥ 30 of them,
  else of its 30 requests nearest in log-length — s_T the cost model's prefill ratio for the bucket's
  input length against the cell's mean input, and s_P its step-time ratio for this shard's mean
  context on that workload (input + output/2) against the cell's (both 1 without a cost model);
* load comes from the arrival rate (Little's law): in each time bucket the concurrency per server is
  c = λ · mean e2e(c), solved by bisection for the user's current config (today's operating point);
  between measured concurrencies the prediction is the mix of the two neighbouring cells weighted
  linearly in log c; above the largest it is held there and counted as ``saturated``. Without
  timestamps a fixed concurrency is used;
* every candidate is compared at that same concurrency: output throughput = output tokens /
  server-seconds, a request holding 1/c of a server for its e2e — the benchmark's definition with this
  trace's lengths and load, i.e. tokens per server at today's batch size, whose ratio is the fleet a
  candidate saves. (Each candidate's own open-loop fixed point would give every candidate the offered
  load λ·L as throughput, which says nothing.) p99 e2e is the weighted 99th percentile over all
  (bucket, sample) pairs at that load; goodput = requests meeting the SLO per server-second;
* bootstrap replicates: each cell's replicate/point ratios, weighted by the cell's share of the server
  time (throughput, goodput) or of the requests (p99) — a first-order propagation of the benchmark noise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from analysis.rescore import fill
from analysis.rescore.matrix import CellSamples
from analysis.rescore.trace import bucket_bounds

MIN_SAMPLES_PER_BUCKET = 30
LOAD_LEVELS = 64
P99 = 0.99


@dataclass(slots=True)
class ShardInput:
    """A shard's buckets as arrays, already split over the store's workloads (candidate-independent)."""

    t: np.ndarray  # time bucket per row
    wi: np.ndarray  # store-workload index per row
    lb: np.ndarray  # output-length bucket per row
    n: np.ndarray  # requests (weighted when a row was split over workloads)
    out: np.ndarray  # output tokens (same weighting)
    inp: np.ndarray  # input tokens
    n_t: np.ndarray  # requests per time bucket
    rate: np.ndarray | None  # arrival rate per server per time bucket (req/s); None: fixed concurrency
    fixed_c: float | None
    grid: list[int]  # measured concurrencies usable for this shard


@dataclass(slots=True)
class Prediction:
    output_throughput: float
    p99_e2e_ms: float
    goodput: float | None
    reps: dict[str, np.ndarray]
    mean_concurrency: float
    saturated_share: float
    requests: float
    tokens: float
    server_s: float
    provenance: dict[str, float] = field(default_factory=dict)  # share of requests per cell provenance
    load: tuple[np.ndarray, np.ndarray] | None = None  # concurrency and saturation per time bucket


_BOUNDS = np.array([bucket_bounds(lb) for lb in range(64)])  # every bucket of an int32 length


@dataclass(slots=True)
class _Selection:
    """Which samples of one output-length array stand for each length bucket ``0 .. lbs - 1``: the indices of
    bucket ``lb`` are ``idx[starts[lb]:starts[lb] + counts[lb]]``, in ascending sample order (every count ≥ 1)."""

    idx: np.ndarray
    starts: np.ndarray
    counts: np.ndarray

    @property
    def lbs(self) -> int:
        return self.counts.size


def _select(outs: np.ndarray, lbs: int) -> list[_Selection]:
    """For each row of ``outs`` (cells' output lengths, all of one size) and every bucket ``lb < lbs`` at once:
    the cell's samples of that length when there are at least ``MIN_SAMPLES_PER_BUCKET``, else its
    ``MIN_SAMPLES_PER_BUCKET`` nearest in log-length (a short request's TPOT averages over few steps and is
    noisier than a long one's; ties to the earlier sample), else all."""
    k = MIN_SAMPLES_PER_BUCKET
    lo, hi = _BOUNDS[:lbs, 0], _BOUNDS[:lbs, 1]
    o = outs[:, None, :]
    mask = (o >= lo[None, :, None]) & (o < hi[None, :, None])  # cell × bucket × sample
    few = mask.sum(axis=2) < k
    if outs.shape[1] > k and few.any():
        fc, fb = np.nonzero(few)
        dist = np.abs(np.log(np.maximum(outs, 1.0))[fc] - np.log(np.sqrt(lo[fb] * hi[fb]))[:, None])
        # The k nearest with ties to the earlier sample (a stable sort's first k), without sorting: all
        # closer than the k-th distance, then the earliest of those at exactly that distance.
        kth = np.partition(dist, k - 1, axis=1)[:, k - 1:k]
        closer, at = dist < kth, dist == kth
        room = k - closer.sum(axis=1, keepdims=True)
        mask[fc, fb] = closer | (at & (np.cumsum(at, axis=1) <= room))
    elif few.any():
        mask[few] = True
    counts = mask.sum(axis=2)
    idx = np.nonzero(mask)[2]  # cell-major, then bucket, then sample: each cell's buckets end to end
    ends = np.cumsum(counts.sum(axis=1))
    return [_Selection(idx=idx[e - int(c.sum()):e], starts=np.cumsum(c) - c, counts=c)
            for c, e in zip(counts, ends.tolist(), strict=True)]


@dataclass(slots=True)
class ScoreCache:
    """What score calls on the same cells share: one per family × GPU (its shards and candidates; the
    reference is scored twice, schedules reuse static cells). ``selections`` per output-length array (cells
    filled from one measured cell share its ``out``), ``tables`` per cell object."""

    selections: dict[int, tuple[_Selection, np.ndarray]] = field(default_factory=dict)
    tables: dict[int, tuple[_Table, CellSamples]] = field(default_factory=dict)
    steps: dict[tuple, tuple[float, float]] = field(default_factory=dict)  # the cost model's step lines
    # The last shard input and operating point seen (a shard's candidates are scored one after the other;
    # one slot each keeps memory at one shard's rows).
    shard: tuple[_Shard, ShardInput] | None = None
    load: tuple[_AtLoad, ShardInput, np.ndarray] | None = None


def _covering(lbs: int) -> int:
    return -(-lbs // 8) * 8  # in steps of 8: a later shard rarely needs more


def prime(cache: ScoreCache, cells: Iterable[CellSamples | None], lbs: int,
          max_elements: int = 2_000_000) -> None:
    """Compute the selections of many cells at once (one array operation per group of equally many samples,
    at most ``max_elements`` cell × bucket × sample at a time): a shard's candidates, before scoring them."""
    lbs = _covering(lbs)
    todo: dict[int, np.ndarray] = {}
    for cell in cells:
        if cell is not None and id(cell.out) not in todo:
            got = cache.selections.get(id(cell.out))
            if got is None or got[0].lbs < lbs:
                todo[id(cell.out)] = cell.out
    by_size: dict[int, list[np.ndarray]] = {}
    for out in todo.values():
        by_size.setdefault(out.size, []).append(out)
    for size, outs in by_size.items():
        step = max(1, max_elements // max(1, lbs * size))
        for i in range(0, len(outs), step):
            chunk = outs[i:i + step]
            for out, sel in zip(chunk, _select(np.stack(chunk), lbs), strict=True):
                cache.selections[id(out)] = (sel, out)  # ``out`` held: its id stays its own


def _selection(out: np.ndarray, lbs: int, cache: ScoreCache) -> _Selection:
    """:func:`_select` of ``out`` covering at least ``lbs`` buckets, computed once per array (cells filled from
    one measured cell share its ``out``)."""
    got = cache.selections.get(id(out))
    if got is None or got[0].lbs < lbs:
        got = (_select(out[None, :], _covering(max(lbs, got[0].lbs if got else 0)))[0], out)
        cache.selections[id(out)] = got
    return got[0]


@dataclass(slots=True)
class _Table:
    """A cell's samples regrouped by length bucket (see :class:`_Selection`), with each bucket's means."""

    ttft: np.ndarray  # ttft[sel.idx]
    tpot: np.ndarray
    sel: _Selection
    m_ttft: np.ndarray  # per bucket
    m_tpot: np.ndarray
    input_mean: float  # the cost model's view of the cell (analysis.rescore.fill)
    context: float


def _table(cell: CellSamples, lbs: int, cache: ScoreCache) -> _Table:
    """The cell's :class:`_Table`, kept in ``cache`` across score calls."""
    got = cache.tables.get(id(cell))
    if got is None or got[0].sel.lbs < lbs:
        sel = _selection(cell.out, lbs, cache)
        tt, tp = cell.ttft[sel.idx], cell.tpot[sel.idx]
        m_tt, m_tp = np.add.reduceat(tt, sel.starts) / sel.counts, np.add.reduceat(tp, sel.starts) / sel.counts
        got = (_Table(tt, tp, sel, m_tt, m_tp, fill.input_mean(cell), fill.context(cell)), cell)  # ``cell`` held
        cache.tables[id(cell)] = got
    return got[0]


@dataclass(slots=True)
class _Shard:
    """What scoring needs of a shard whatever the candidate: per-row lengths, (workload, length bucket)
    pairs, each workload's pairs and context."""

    lm1: np.ndarray  # mean output tokens per row less the first: max(L - 1, 0)
    inp: np.ndarray  # mean input tokens per row
    pair_of_row: np.ndarray
    pair_w: np.ndarray
    pair_lb: np.ndarray
    lbs: int  # buckets 0 .. lbs - 1 cover every pair
    pairs_of: dict[int, np.ndarray]  # workload -> its pairs
    ctx_w: dict[int, float]


def _shard(si: ShardInput, n_w: int, cache: ScoreCache) -> _Shard:
    got = cache.shard
    if got is None or got[1] is not si:
        L = si.out / np.maximum(si.n, 1e-12)
        codes, pair_of_row = np.unique(si.wi * 256 + si.lb, return_inverse=True)  # lb < 64 for any int32 length
        pair_w, pair_lb = codes // 256, codes % 256
        # Context per workload (mean input + half the mean output over the shard): TPOT moves with how much
        # longer this trace's contexts are than the cell's on average; the per-request spread is already in
        # the cell's samples, so scaling each row by its own context would count it twice.
        ctx_w = {w: float((si.inp[si.wi == w].sum() + si.out[si.wi == w].sum() / 2) / max(si.n[si.wi == w].sum(),
                                                                                          1e-12))
                 for w in range(n_w)}
        got = (_Shard(lm1=np.maximum(L - 1, 0), inp=si.inp / np.maximum(si.n, 1e-12),
                      pair_of_row=pair_of_row.reshape(-1), pair_w=pair_w, pair_lb=pair_lb,
                      lbs=int(pair_lb.max()) + 1,
                      pairs_of={w: np.flatnonzero(pair_w == w) for w in np.unique(pair_w).tolist()},
                      ctx_w=ctx_w), si)
        cache.shard = got
    return got[0]


@dataclass(slots=True)
class _AtLoad:
    """What scoring needs of a shard at an operating point whatever the candidate: each row's neighbouring
    grid loads and weight, and its components (row, lower g) and (row, upper g) grouped by (pair, g)."""

    rows: np.ndarray
    i_r: np.ndarray
    j_r: np.ndarray
    w_r: np.ndarray
    c_r: np.ndarray
    keep: np.ndarray  # components with weight
    comp_w: np.ndarray
    comp_row: np.ndarray
    comp_g: np.ndarray
    key: np.ndarray  # (pair, g) of each component
    n_keys: int
    wsum: np.ndarray  # requests per (pair, g)
    safe: np.ndarray
    lbar: np.ndarray  # mean output tokens less the first per (pair, g)
    ks: np.ndarray  # (pair, g) groups with requests, and their pair and g
    kp: np.ndarray
    kg: np.ndarray
    cell_idx: np.ndarray  # (w, g) of each component
    tokens: float
    requests: float
    mean_concurrency: float


def _at_load(si: ShardInput, sh: _Shard, c_t: np.ndarray, grid: np.ndarray, cache: ScoreCache) -> _AtLoad:
    got = cache.load
    if got is not None and got[1] is si and got[2] is c_t:
        return got[0]
    n_g = grid.size
    i_t, w_t = _interp(c_t, grid)
    i_r, w_r, c_r = i_t[si.t], w_t[si.t], c_t[si.t]
    rows = np.arange(si.n.size)
    j_r = np.minimum(i_r + 1, n_g - 1)
    comp_w = np.concatenate([si.n * (1 - w_r), si.n * w_r])
    comp_pair = np.concatenate([sh.pair_of_row, sh.pair_of_row])
    comp_g = np.concatenate([i_r, j_r])
    comp_row = np.concatenate([rows, rows])
    keep = comp_w > 0
    comp_w, comp_pair, comp_g, comp_row = comp_w[keep], comp_pair[keep], comp_g[keep], comp_row[keep]
    # Group components by (pair, g): rows in a group share samples; their L and scalings are averaged.
    key = comp_pair * n_g + comp_g
    n_keys = sh.pair_w.size * n_g
    wsum = np.bincount(key, weights=comp_w, minlength=n_keys)
    safe = np.where(wsum > 0, wsum, 1.0)
    lbar = np.bincount(key, weights=comp_w * sh.lm1[comp_row], minlength=n_keys) / safe
    ks = np.flatnonzero(wsum > 0)
    requests = float(si.n.sum())
    got = (_AtLoad(rows=rows, i_r=i_r, j_r=j_r, w_r=w_r, c_r=c_r, keep=keep, comp_w=comp_w, comp_row=comp_row,
                   comp_g=comp_g, key=key, n_keys=n_keys, wsum=wsum, safe=safe, lbar=lbar, ks=ks, kp=ks // n_g,
                   kg=ks % n_g, cell_idx=si.wi[comp_row] * n_g + comp_g, tokens=float(si.out.sum()),
                   requests=requests, mean_concurrency=float((si.n * c_r).sum() / requests)), si, c_t)
    cache.load = got
    return got[0]


def _segments(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(s, s + c)`` for each (s, c)."""
    total = int(counts.sum())
    offs = np.cumsum(counts) - counts
    return np.arange(total) - np.repeat(offs - starts, counts)


def _interp(c: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower grid index and weight of the upper neighbour, linear in log c (c already clamped)."""
    if grid.size == 1:
        return np.zeros(c.shape, dtype=int), np.zeros(c.shape)
    i = np.clip(np.searchsorted(grid, c, side="right") - 1, 0, grid.size - 2)
    lg = np.log(grid)
    w = (np.log(c) - lg[i]) / (lg[i + 1] - lg[i])
    return i, np.clip(w, 0.0, 1.0)


def _solve_load(si: ShardInput, a_tg: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concurrency per time bucket from c = λ·mean e2e(c); also whether the bucket saturated."""
    n_t = np.maximum(si.n_t, 1e-12)
    if si.rate is None:
        c = np.full(n_t.shape, float(np.clip(si.fixed_c or grid[0], grid[0], grid[-1])))
        return c, np.zeros(n_t.shape, dtype=bool)

    def excess(c: np.ndarray) -> np.ndarray:
        i, w = _interp(c, grid)
        rows = np.arange(c.size)
        mean_e2e_s = ((1 - w) * a_tg[rows, i] + w * a_tg[rows, np.minimum(i + 1, grid.size - 1)]) / n_t / 1e3
        return si.rate * mean_e2e_s - c

    lo, hi = np.full(n_t.shape, float(grid[0])), np.full(n_t.shape, float(grid[-1]))
    saturated = excess(hi) > 0
    idle = excess(lo) <= 0
    for _ in range(40):  # bisection in log c
        mid = np.sqrt(lo * hi)
        up = excess(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    c = np.where(saturated, grid[-1], np.where(idle, grid[0], np.sqrt(lo * hi)))
    return c, saturated


@dataclass(frozen=True, slots=True)
class Candidate:
    """One (method, depth) to score: its filled cells ``cells[w][g]`` per store workload × grid load, and
    its depth (or one depth per grid load: a depth schedule per batch size)."""

    cells: list[list[CellSamples | None]]
    method: str
    depth: int | list[int]


MAX_BATCH_SAMPLES = 2_000_000  # (candidate, sample) pairs scored in one array operation


def score(cells: list[list[CellSamples | None]], si: ShardInput, *, method: str, depth: int | list[int],
          workloads: list[str],
          dep, slo: tuple[float, float] | None, n_rep: int,
          load: tuple[np.ndarray, np.ndarray] | None = None, cache: ScoreCache | None = None) -> Prediction:
    """Predict one candidate on one shard (see :func:`score_many`); ``load`` None solves the operating point
    from this candidate's own latency (done once, for the reference config)."""
    return score_many([Candidate(cells, method, depth)], si, workloads=workloads, dep=dep, slo=slo, n_rep=n_rep,
                      load=load, cache=cache)[0]


def score_many(cands: list[Candidate], si: ShardInput, *, workloads: list[str], dep,
               slo: tuple[float, float] | None, n_rep: int, load: tuple[np.ndarray, np.ndarray] | None = None,
               cache: ScoreCache | None = None) -> list[Prediction]:
    """Predict candidates on one shard at one operating point, many at a time.

    ``load`` (concurrency and saturation per time bucket) is the operating point every candidate is
    compared at; None solves it from the (single) candidate's own latency. ``cache``: the cells'
    per-bucket samples, kept between calls on the same cells (see :func:`_table`). Each candidate's numbers
    are those it gets scored alone: the batch only stacks the same arithmetic.
    """
    if load is None and len(cands) != 1:
        raise ValueError("solving the operating point takes exactly one candidate")
    cache = ScoreCache() if cache is None else cache
    out: list[Prediction] = []
    batch: list[Candidate] = []
    size = 0
    for cand in cands:
        n = sum(cell.out.size for per_w in cand.cells for cell in per_w if cell is not None)
        if batch and size + n > MAX_BATCH_SAMPLES:
            out += _score_batch(batch, si, workloads, dep, slo, n_rep, load, cache)
            batch, size = [], 0
        batch.append(cand)
        size += n
    if batch:
        out += _score_batch(batch, si, workloads, dep, slo, n_rep, load, cache)
    return out


def _score_batch(cands: list[Candidate], si: ShardInput, workloads: list[str], dep,
                 slo: tuple[float, float] | None, n_rep: int, load: tuple[np.ndarray, np.ndarray] | None,
                 cache: ScoreCache) -> list[Prediction]:
    grid = np.asarray(si.grid, dtype=float)
    n_w, n_g, n_j = len(workloads), grid.size, len(cands)
    sh = _shard(si, n_w, cache)
    pair_of_row, pair_w, pair_lb = sh.pair_of_row, sh.pair_w, sh.pair_lb
    p0, p1 = fill.prefill_line(dep)
    # Per candidate and (pair, g): mean TTFT and TPOT of the samples, from each cell's per-bucket table; per
    # candidate and (w, g): the cost model's step-time ratio and prefill denominator.
    m_ttft, m_tpot = np.empty((n_j, pair_w.size, n_g)), np.empty((n_j, pair_w.size, n_g))
    sp_wg, den_wg = np.ones((n_j, n_w, n_g)), np.ones((n_j, n_w, n_g))
    tables: list[_Table] = []  # candidate-major, then (w, g) in the order of ``table_of``
    table_of = np.full((n_w, n_g), -1)
    for j, cand in enumerate(cands):
        for w, of_w in sh.pairs_of.items():  # the shard's workloads (each has pairs and rows)
            lb_w = pair_lb[of_w]
            for g in range(n_g):
                tab = _table(cand.cells[w][g], sh.lbs, cache)
                if j == 0:  # every candidate's tables come in the same (w, g) order
                    table_of[w, g] = len(tables)
                tables.append(tab)
                m_ttft[j, of_w, g], m_tpot[j, of_w, g] = tab.m_ttft[lb_w], tab.m_tpot[lb_w]
                k = cand.depth[g] if isinstance(cand.depth, list) else cand.depth
                step = (cand.method, workloads[w], k, float(grid[g]))  # ``dep``: the family × GPU's, as the cache
                if step not in cache.steps:
                    cache.steps[step] = fill.step_line(cand.method, workloads[w], k, dep, grid[g])
                t0, t1 = cache.steps[step]
                sp_wg[j, w, g] = (t0 + t1 * sh.ctx_w[w]) / (t0 + t1 * tab.context)
                den_wg[j, w, g] = p0 + p1 * tab.input_mean
    per_j = len(tables) // n_j
    s_p = sp_wg[:, si.wi, :]
    s_t = (p0 + p1 * sh.inp)[None, :, None] / den_wg[:, si.wi, :]
    e2e_rg = m_ttft[:, pair_of_row] * s_t + sh.lm1[None, :, None] * m_tpot[:, pair_of_row] * s_p  # mean ms
    if load is None:
        n_t_buckets = si.n_t.size
        a_tg = np.zeros((n_t_buckets, n_g))
        for g in range(n_g):
            a_tg[:, g] = np.bincount(si.t, weights=si.n * e2e_rg[0, :, g], minlength=n_t_buckets)
        load = _solve_load(si, a_tg, grid)
    c_t, sat_t = load
    at = _at_load(si, sh, c_t, grid, cache)
    rows, i_r, j_r, w_r, comp_row, comp_g, key, n_keys = (at.rows, at.i_r, at.j_r, at.w_r, at.comp_row, at.comp_g,
                                                           at.key, at.n_keys)
    e2e_r = (1 - w_r) * e2e_rg[:, rows, i_r] + w_r * e2e_rg[:, rows, j_r]
    server_ms = si.n * e2e_r / at.c_r
    tokens, requests = at.tokens, at.requests
    server_s = np.array([np.add.reduce(row) for row in server_ms]) / 1e3  # each row as a 1-D sum, as alone
    comp_w, wsum, safe, lbar = at.comp_w, at.wsum, at.safe, at.lbar
    # Per candidate, its groups' mean scalings (one bincount over the candidates' groups side by side).
    jkey = (np.arange(n_j)[:, None] * n_keys + key[None, :]).ravel()
    st = (np.bincount(jkey, weights=(comp_w * s_t[:, comp_row, comp_g]).ravel(), minlength=n_j * n_keys)
          .reshape(n_j, n_keys) / safe)
    sp = (np.bincount(jkey, weights=(comp_w * s_p[:, comp_row, comp_g]).ravel(), minlength=n_j * n_keys)
          .reshape(n_j, n_keys) / safe)
    # Every candidate's (pair, g) groups' samples at once, candidate by candidate in group order: the cells'
    # tables end to end, each group a segment of them.
    ks, kp, kg = at.ks, at.kp, at.kg
    sizes = np.array([t.ttft.size for t in tables])
    n_lbs = np.array([t.sel.lbs for t in tables])
    ti = (np.arange(n_j)[:, None] * per_j + table_of[pair_w[kp], kg][None, :]).ravel()
    jj = (np.cumsum(n_lbs) - n_lbs)[ti] + np.tile(pair_lb[kp], n_j)
    seg_n = np.concatenate([t.sel.counts for t in tables])[jj]
    seg_start = (np.cumsum(sizes) - sizes)[ti] + np.concatenate([t.sel.starts for t in tables])[jj]
    seg = _segments(seg_start, seg_n)
    tt, tp = np.concatenate([t.ttft for t in tables])[seg], np.concatenate([t.tpot for t in tables])[seg]
    st_e, lbar_e = np.repeat(st[:, ks].ravel(), seg_n), np.repeat(np.tile(lbar[ks], n_j), seg_n)
    sp_e = np.repeat(sp[:, ks].ravel(), seg_n)
    vals = tt * st_e + lbar_e * tp * sp_e
    wts = np.repeat(np.tile(wsum[ks], n_j) / seg_n, seg_n)
    bounds = np.r_[0, np.cumsum(seg_n.reshape(n_j, ks.size).sum(axis=1))]
    met = None
    if slo is not None:
        ok = (tt * st_e <= slo[0]) & (tp * sp_e <= slo[1])
        met = (np.bincount(np.repeat(np.arange(n_j * ks.size), seg_n), weights=ok, minlength=n_j * ks.size)
               / seg_n).reshape(n_j, ks.size)
    # Shares per cell (w, g) for replicate propagation and provenance.
    st_share = np.bincount((np.arange(n_j)[:, None] * (n_w * n_g) + at.cell_idx[None, :]).ravel(),
                           weights=np.concatenate([server_ms * (1 - w_r), server_ms * w_r], axis=1)[:, at.keep].ravel(),
                           minlength=n_j * n_w * n_g).reshape(n_j, n_w * n_g)
    rq_share = np.bincount(at.cell_idx, weights=comp_w, minlength=n_w * n_g)
    saturated_share = float(si.n_t[sat_t].sum() / requests)
    preds = []
    for j, cand in enumerate(cands):
        srv = float(server_s[j])
        thr = tokens / srv if srv > 0 else float("nan")
        v, wt = vals[bounds[j]:bounds[j + 1]], wts[bounds[j]:bounds[j + 1]]
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(wt[order])
        p99 = float(v[order][np.searchsorted(cum, P99 * cum[-1])])
        goodput = None
        if met is not None:
            meeting = sum((wsum[ks] * met[j]).tolist())  # summed in group order, as one at a time
            goodput = meeting / srv if srv > 0 else None
        flat = [cand.cells[w][g] for w in range(n_w) for g in range(n_g)]
        thr_rep = np.full(n_rep, thr)
        p99_rep = np.full(n_rep, p99)
        if n_rep:
            used = [i for i in range(len(flat)) if st_share[j, i] > 0 or rq_share[i] > 0]
            with np.errstate(invalid="ignore", divide="ignore"):
                inv = sum(st_share[j, i] / 1e3 / _reps(flat[i].thr_ratio, n_rep) for i in used)
                thr_rep = tokens / inv
                p99_rep = p99 * sum(rq_share[i] / requests * _reps(flat[i].p99_ratio, n_rep) for i in used)
        reps = {"output_throughput": thr_rep, "p99_e2e_ms": p99_rep}
        if goodput is not None:
            reps["goodput"] = goodput * thr_rep / thr
        prov: dict[str, float] = {}
        for i, cell in enumerate(flat):
            if rq_share[i] > 0:
                prov[cell.provenance] = prov.get(cell.provenance, 0.0) + float(rq_share[i]) / requests
        preds.append(Prediction(output_throughput=thr, p99_e2e_ms=p99, goodput=goodput, reps=reps,
                                mean_concurrency=at.mean_concurrency, saturated_share=saturated_share,
                                requests=requests, tokens=tokens, server_s=srv,
                                provenance={k: round(v, 6) for k, v in sorted(prov.items())}, load=(c_t, sat_t)))
    return preds


def collapse(si: ShardInput, load: tuple[np.ndarray, np.ndarray], levels: int = LOAD_LEVELS
             ) -> tuple[ShardInput, tuple[np.ndarray, np.ndarray]]:
    """The shard regrouped by load level instead of time: same requests, ~50× fewer rows to score.

    Once the operating point is known, time matters only through the concurrency it puts each bucket
    at, so buckets are pooled on ``levels`` log-spaced concurrencies (±3 % at 64 levels over 1–64).
    """
    c_t, sat_t = load
    grid = np.asarray(si.grid, dtype=float)
    span = float(np.log(grid[-1] / grid[0]))
    q_t = np.rint((np.log(c_t / grid[0]) / span) * (levels - 1)).astype(int) if span > 0 else np.zeros(c_t.size, int)
    codes, level_of_t = np.unique(q_t * 2 + sat_t.astype(int), return_inverse=True)
    c_lv = grid[0] * np.exp(codes // 2 / max(levels - 1, 1) * span)
    sat_lv = (codes % 2).astype(bool)
    lv = level_of_t.reshape(-1)[si.t]
    keys, row_of = np.unique((lv * 64 + si.wi) * 256 + si.lb, return_inverse=True)
    row_of = row_of.reshape(-1)
    new = ShardInput(t=(keys // (64 * 256)).astype(int), wi=((keys // 256) % 64).astype(int),
                     lb=(keys % 256).astype(int), n=np.bincount(row_of, weights=si.n),
                     out=np.bincount(row_of, weights=si.out), inp=np.bincount(row_of, weights=si.inp),
                     n_t=np.bincount(lv, weights=si.n, minlength=codes.size), rate=None, fixed_c=None, grid=si.grid)
    return new, (c_lv, sat_lv)


def _reps(ratio: np.ndarray, n_rep: int) -> np.ndarray:
    return ratio if ratio.size == n_rep else np.full(n_rep, np.nan)
